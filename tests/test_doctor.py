"""`formwork doctor` tells a healthy setup from a broken one, says what to fix, and leaks no password."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from formwork.db.session import get_engine
from formwork.flows.cli import app

runner = CliRunner()
PASSWORD = "s3cret-pw-77"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_a_healthy_sqlite_and_embedded_setup_passes(local_engine, db_url, monkeypatch) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    get_engine(db_url)  # an existing, migrated database
    result = runner.invoke(app, ["doctor", "--db", db_url], env={"FORMWORK_ENGINE": "local"})
    assert result.exit_code == 0, result.output
    assert "FAIL" not in result.output
    assert "at head" in result.output and "ephemeral mode" in result.output
    assert "probe answered" in result.output


def test_a_new_sqlite_file_is_fine_and_not_created(tmp_path) -> None:
    from formwork.flows.cli.doctor import diagnose

    path = tmp_path / "later.db"
    checks = {check.name: check for check in diagnose(f"sqlite:///{path}")}
    assert checks["database"].state == "ok" and "not created yet" in checks["database"].found
    assert not path.exists(), "doctor must only look, never create"


def test_a_database_behind_head_is_a_warning_not_a_migration(tmp_path) -> None:
    from alembic import command

    from formwork.db.session import alembic_config
    from formwork.flows.cli.doctor import diagnose

    url = f"sqlite:///{tmp_path / 'old.db'}"
    command.upgrade(alembic_config(url), "0001")
    checks = {check.name: check for check in diagnose(url)}
    assert checks["migrations"].state == "warn" and "at 0001" in checks["migrations"].found
    from sqlalchemy import create_engine, text

    with create_engine(url).connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0001"


def test_dead_vllm_and_unreachable_postgres_fail_with_what_to_fix() -> None:
    pg_port, vllm_port = _closed_port(), _closed_port()
    db = f"postgresql://formwork:{PASSWORD}@127.0.0.1:{pg_port}/nightly"
    env = {"FORMWORK_ENGINE": "vllm", "FORMWORK_VLLM_URL": f"http://ops:{PASSWORD}@127.0.0.1:{vllm_port}/v1"}
    result = runner.invoke(app, ["doctor", "--db", db], env=env)
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.startswith("FAIL ")]
    database = next(line for line in lines if line.startswith("FAIL database:"))
    assert f"port {pg_port}" in database and "Fix: start the database or correct FORMWORK_DB_URL" in database
    engine = next(line for line in lines if line.startswith("FAIL engine vllm"))
    assert "Connection refused" in engine and "correct FORMWORK_VLLM_URL" in engine
    assert PASSWORD not in result.output
    assert "configuration" in result.output and "prefect" in result.output  # the other checks still ran


def test_bad_settings_are_said_plainly(monkeypatch) -> None:
    result = runner.invoke(app, ["doctor"], env={"FORMWORK_CHUNK_SIZE": "0"})
    assert result.exit_code == 1
    line = next(line for line in result.output.splitlines() if line.startswith("FAIL configuration"))
    assert "chunk_size" in line and "greater than or equal to 1" in line


def test_an_unreachable_prefect_server_fails() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/api"
    result = runner.invoke(app, ["doctor"], env={"PREFECT_API_URL": url, "FORMWORK_ENGINE": "vllm",
                                                 "FORMWORK_VLLM_URL": "http://127.0.0.1:9/v1"})  # fmt: skip
    line = next(line for line in result.output.splitlines() if line.startswith("FAIL prefect"))
    assert "PREFECT_API_URL" in line


@pytest.mark.llama_server
def test_doctor_shows_each_openai_servers_dialect_probe_and_logprob_mode(llama_server, monkeypatch) -> None:
    from formwork.flows.cli.doctor import diagnose

    dead = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("FORMWORK_ENGINE", "openai")
    monkeypatch.setenv("FORMWORK_OPENAI_URL", f"{llama_server.base_url},{dead}")
    served, gone = [c for c in diagnose("sqlite:///:memory:") if c.name.startswith("engine openai")]
    assert (
        served.state == "ok"
        and "dialect json_object+schema; probe constrained; logprobs renormalised" in served.found
    )
    assert gone.state == "FAIL" and "probe refused" in gone.found and "is the server running" in gone.fix
