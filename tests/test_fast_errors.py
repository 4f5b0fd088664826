"""A schema, file or model mistake is one line before Prefect or a model starts (issue 51 point 6): each
took `formwork run` 40 to 60 s to report, after the ephemeral Prefect server had started. Here starting
Prefect (the CLI's `cli_flows`) trips the test; the times measured are in flows/cli/preflight.py's commit.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

import formwork.flows.cli
import formwork.flows.prefect_env
from formwork.flows.cli import app
from formwork.tasks.reader_choice import BEST_MODEL
from formwork.tasks.settings import Settings

runner = CliRunner()


@pytest.fixture
def no_prefect(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Prefect's start-up replaced by a tripwire, which records that a command got that far; an empty
    model cache, no formwork.toml."""
    started: list[str] = []

    @contextmanager
    def tripwire():
        started.append("prefect")
        raise AssertionError("Prefect was started")
        yield

    monkeypatch.setattr(formwork.flows.cli, "cli_flows", tripwire)
    monkeypatch.setattr(formwork.flows.prefect_env, "cli_flows", tripwire)
    monkeypatch.setenv("FORMWORK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FORMWORK_CONFIG", str(tmp_path / "no-formwork.toml"))
    monkeypatch.setenv("COLUMNS", "600")
    return started


@pytest.fixture
def one_record(tmp_path: Path) -> Path:
    path = tmp_path / "one.jsonl"
    path.write_text('{"id": "a", "text": "Taxi 35 EUR, Tom"}\n', encoding="utf-8")
    return path


def _run(tmp_path: Path, *args: str):
    return runner.invoke(app, ["run", *args, "--db", f"sqlite:///{tmp_path}/x.db"])


def test_a_missing_input_is_refused_before_prefect(no_prefect, tmp_path) -> None:
    ran = _run(tmp_path, str(tmp_path / "nope.jsonl"), "--schema", "expense")
    assert ran.exit_code == 2 and "does not exist" in ran.output and no_prefect == []


def test_an_unknown_or_broken_schema_is_refused_before_prefect(no_prefect, one_record, tmp_path) -> None:
    ran = _run(tmp_path, str(one_record), "--schema", "nosuch")
    assert ran.exit_code == 2 and "unknown schema 'nosuch'" in ran.output and no_prefect == []
    broken = tmp_path / "broken.json"
    broken.write_text("{broken", encoding="utf-8")
    ran = _run(tmp_path, str(one_record), "--schema", str(broken))
    assert ran.exit_code == 2 and "is not readable JSON" in ran.output and no_prefect == []


def test_an_unknown_or_missing_model_is_refused_before_prefect(no_prefect, one_record, tmp_path) -> None:
    ran = _run(tmp_path, str(one_record), "--schema", "expense", "--model", "qwen9")
    assert ran.exit_code == 2 and "unknown model 'qwen9'" in ran.output and no_prefect == []
    ran = _run(tmp_path, str(one_record), "--schema", "expense", "--model", "qwen2.5-coder-1.5b")
    assert ran.exit_code == 2 and "formwork models install qwen2.5-coder-1.5b" in ran.output
    ran = _run(tmp_path, str(one_record), "--schema", "expense", "--model", "smollm2-135m@fast")
    assert ran.exit_code == 2 and "'fast' is not a mode" in ran.output and no_prefect == []


def test_a_model_named_in_the_settings_is_checked_before_prefect(
    no_prefect, one_record, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("FORMWORK_LOCAL_MODEL", "qwen2.5-coder-0.5b")
    ran = _run(tmp_path, str(one_record), "--schema", "expense")
    assert ran.exit_code == 2 and "model qwen2.5-coder-0.5b is not installed" in ran.output
    assert no_prefect == []


def test_retry_and_eval_refuse_an_unknown_model_before_prefect(no_prefect, one_record, tmp_path) -> None:
    db = f"sqlite:///{tmp_path}/x.db"
    retried = runner.invoke(app, ["retry", "--model", "qwen9", "--db", db])
    assert retried.exit_code == 2 and "unknown model 'qwen9'" in retried.output
    evaluated = runner.invoke(app, ["eval", str(one_record), "--schema", "expense", "--model", "qwen9",
                                    "--db", db])  # fmt: skip
    assert evaluated.exit_code == 2 and "unknown model 'qwen9'" in evaluated.output
    both = runner.invoke(app, ["eval", str(one_record), "--schema", "expense", "--model",
                               "smollm2-135m@one-pass", "--mode", "two-pass", "--db", db])  # fmt: skip
    assert both.exit_code == 2 and "not both" in both.output and no_prefect == []


def test_model_names_the_reader_the_flow_reads(monkeypatch) -> None:
    """What --model hands the flow (through the environment) is these settings."""
    from formwork.flows.cli.preflight import chosen_reader

    monkeypatch.delenv("FORMWORK_MODE", raising=False)
    for name, value in chosen_reader("qwen2.5-coder-1.5b").items():
        monkeypatch.setenv(f"FORMWORK_{name.upper()}", value)
    settings = Settings()
    assert (settings.engine, settings.local_model, settings.mode) == ("local", BEST_MODEL, "one-pass")
    assert chosen_reader("smollm2-135m@two-readings") == {
        "engine": "local", "local_model": "smollm2-135m", "mode": "two-readings"
    }  # fmt: skip
