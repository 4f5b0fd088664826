"""Integrity end to end: through `formwork run`, the flows and the engines, on the real embedded model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from formwork.db.models import Record, Result, RetryEntry
from formwork.db.session import session_factory
from formwork.db.store import text_digest
from formwork.flows.batch_extract import batch_extract
from formwork.flows.cli import app
from formwork.flows.cli.common import resolve_db
from formwork.flows.reprocess_failed import reprocess_failed
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines.base import EngineUnavailable, RequestRejected, Sampling
from formwork.tasks.engines.vllm_server import VllmServerEngine
from formwork.tasks.extract import extract_record
from formwork.tasks.fit import fit_source
from tests.misbehaving_server import MisbehavingServer
from tests.run_exit import expected_exit

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fast(monkeypatch) -> None:
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "16")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_changed_file_and_a_fixed_line_are_extracted_again(
    prefect_harness, local_engine, fast, tmp_path
) -> None:
    source = _write(tmp_path / "in.jsonl", ['{"text": "Taxi 20 EUR"}', "{broken"])
    db = f"sqlite:///{tmp_path}/x.db"
    first = runner.invoke(app, ["run", str(source), "--schema", "expense", "--db", db])
    assert first.exit_code == expected_exit(first.output), first.output
    # a line inserted at the top (line numbers move) and the broken line fixed by the operator
    _write(source, ['{"text": "Hotel 300 GBP"}', '{"text": "Taxi 20 EUR"}', '{"text": "Lunch 12 USD"}'])
    second = runner.invoke(app, ["run", str(source), "--schema", "expense", "--db", db])
    assert second.exit_code == expected_exit(second.output), second.output
    with session_factory(db)() as session:
        pairs = session.execute(select(Record, Result).join(Result, Result.record_id == Record.id)).all()
    texts = {record.text: result for record, result in pairs}
    assert {"Hotel 300 GBP", "Lunch 12 USD", "Taxi 20 EUR"} <= set(texts)
    assert all(result.text_hash == text_digest(record.text) for record, result in pairs)
    assert "not valid JSON" not in " ".join(texts["Lunch 12 USD"].errors)  # the fix was processed
    rows = [json.loads(line) for line in
            runner.invoke(app, ["results", "--db", db, "--format", "jsonl"]).stdout.splitlines()]  # fmt: skip
    # issue 20 point 10: the unchanged Taxi line keeps its key (its text), so it is not extracted again;
    # the latest run extracted the two new texts, and four texts have results (the broken line's too)
    assert len(rows) == 2 and len(pairs) == 4
    assert {row["run"] for row in rows} == {2} and texts["Taxi 20 EUR"].run_id == 1


def test_cli_arguments_are_checked_with_clear_errors(tmp_path) -> None:
    source = _write(tmp_path / "in.jsonl", ['{"text": "Taxi 20 EUR"}'])
    db = f"sqlite:///{tmp_path}/x.db"
    for bad in (["--limit", "-1"], ["--chunk-size", "0"], ["--chunk-size", "-1"]):
        result = runner.invoke(app, ["run", str(source), "--schema", "expense", "--db", db, *bad])
        assert result.exit_code == 2 and "Invalid value" in result.output, bad
    result = runner.invoke(app, ["results", "--db", db, "--status", "done"])
    assert result.exit_code == 2 and "Invalid value" in result.output
    assert resolve_db("postgres://u@db.internal/x") == "postgresql+psycopg://u@db.internal/x"


def test_secrets_never_reach_errors_flow_parameters_or_the_wire_unasked(tmp_path) -> None:
    dead = VllmServerEngine("http://formwork:hunter2@127.0.0.1:9/v1", "m", timeout_s=2)
    with pytest.raises(EngineUnavailable) as caught:
        dead.complete([{"role": "user", "content": "hi"}], Sampling(4))
    assert "hunter2" not in str(caught.value) and "formwork:***@" in str(caught.value)
    with MisbehavingServer("ok") as fake:
        keyed = VllmServerEngine(fake.base_url, "fake-model", api_key="sk-test-0123456789")
        keyed.complete([{"role": "user", "content": "hi"}], Sampling(4))
        assert fake.requests[-1]["headers"]["Authorization"] == "Bearer sk-test-0123456789"
    with pytest.raises(ValueError, match="must not carry a password"):
        batch_extract.validate_parameters({"source": "in.jsonl", "schema": "expense",
                                           "db_url": "postgresql://u:pw@db/x"})  # fmt: skip
    import logging

    from formwork.flows.prefect_env import quiet_and_redacted

    quiet_and_redacted()  # what the CLI and every flow module install
    logged = logging.getLogger("formwork.test").makeRecord(
        "formwork.test", logging.ERROR, __file__, 1, "cannot reach %s", ("postgresql://u:hunter2@db/x",), None
    )
    assert logged.getMessage() == "cannot reach postgresql://u:***@db/x"
    script = str(ROOT / "deploy/vllm/serve_gpu.sh")
    env = {**os.environ, "HOST": "0.0.0.0"}
    refused = subprocess.run(["bash", script, "some/model"], env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "VLLM_API_KEY" in refused.stderr


@pytest.fixture(scope="module")
def small_context_engine():
    """The bundled model with a 2,048-token context: a text overflows it without a long prefill."""
    from formwork.tasks.engines.local import LocalEngine

    return LocalEngine(n_ctx=2048, slots=1)


@pytest.mark.slow
def test_prompts_are_budgeted_in_tokens_and_a_hopeless_prompt_is_not_queued(small_context_engine) -> None:
    engine, schema = small_context_engine, load_schema("expense")
    long_chinese = "出租车费用三十五欧元，二零二四年三月三日。" * 120  # 2,520 characters, more tokens
    assert engine.count_tokens(long_chinese) > engine.context_window  # cut by characters, it overflowed
    fitted = fit_source(long_chinese, schema, (engine,), 8, 48)
    assert fitted.cut and fitted.reasoning_cap >= 8
    options = ExtractOptions(8, format_max_tokens=48, max_attempts=1)  # short passes: the fit is tested
    outcome = extract_record(1, long_chinese, schema, engine, engine, options)
    assert not any("does not fit the context" in e for e in outcome.verdict.errors)
    assert any("cut" in e for e in outcome.verdict.errors) and outcome.calls
    with pytest.raises(RequestRejected):
        fit_source("Taxi 20 EUR", schema, (engine,), engine.context_window, 200)
    hopeless = extract_record(
        2, "Taxi 20 EUR", schema, engine, engine, ExtractOptions(reasoning_max_tokens=engine.context_window)
    )
    assert hopeless.verdict.status == "failed" and not hopeless.queueable and not hopeless.calls


@pytest.mark.slow
def test_a_queued_entry_keeps_its_schema_body_for_a_worker_elsewhere(
    prefect_harness, local_engine, fast, monkeypatch, tmp_path, write_jsonl, db_url
) -> None:
    work = tmp_path / "nightly"
    work.mkdir()
    shutil.copy(ROOT / "schemas/builtin/chat_tag.json", work / "my_tags.json")
    monkeypatch.chdir(work)
    monkeypatch.setenv("FORMWORK_FORMAT_MAX_TOKENS", "3")  # every record fails at `length` and is queued
    batch_extract(str(write_jsonl([{"id": "a", "text": "Anna: we won!"}])), "my_tags.json", db_url=db_url)
    monkeypatch.delenv("FORMWORK_FORMAT_MAX_TOKENS")
    (work / "my_tags.json").unlink()  # the hourly worker runs elsewhere; the file is gone
    monkeypatch.chdir(tmp_path)
    with session_factory(db_url)() as session:
        session.execute(RetryEntry.__table__.update().values(next_attempt_at=RetryEntry.updated_at))
        session.commit()
    summaries = reprocess_failed(db_url=db_url, limit=10)
    assert len(summaries) == 1 and summaries[0].records == 1
    with session_factory(db_url)() as session:
        errors = [e for r in session.scalars(select(Result)) for e in r.errors]
    assert not any("schema unusable" in e for e in errors)
