"""The `formwork` command as a data engineer uses it: run, read results back, list and lint schemas."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from formwork.flows.cli import app
from tests.run_exit import expected_exit

runner = CliRunner()


def test_help_explains_every_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("run", "results", "schemas"):
        assert command in result.output


def test_schemas_lists_the_builtins_with_critical_fields() -> None:
    result = runner.invoke(app, ["schemas"])
    assert result.exit_code == 0
    assert "expense" in result.output and "amount, currency" in result.output


def test_schemas_lints_a_user_file(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"type": "object", "properties": {"a": {"$ref": "https://x.org/a.json"}}}))
    result = runner.invoke(app, ["schemas", str(bad)])
    assert result.exit_code == 1 and "points outside this file" in result.output


def test_unknown_schema_exits_2_with_a_message(tmp_path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "x"}\n')
    result = runner.invoke(
        app, ["run", str(source), "--schema", "invoice", "--db", f"sqlite:///{tmp_path}/x.db"]
    )
    assert result.exit_code == 2 and "unknown schema 'invoice'" in result.output


@pytest.mark.slow
def test_run_then_results_as_table_jsonl_and_csv(
    prefect_harness, local_engine, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"id": "a", "text": "Taxi 35 EUR, Tom"}\n{"id": "b", "text": ""}\n{"id": "c", "text": "x"}\n'
    )
    db = f"sqlite:///{tmp_path}/cli.db"
    ran = runner.invoke(app, ["run", str(source), "--schema", "expense", "--db", db, "--limit", "2"])
    assert "status failed" in ran.output and "model calls" in ran.output and "2 records" in ran.output

    jsonl = runner.invoke(app, ["results", "--db", db, "--format", "jsonl"])
    rows = [json.loads(line) for line in jsonl.stdout.splitlines()]
    every_one_failed = all(row["status"] == "failed" for row in rows)  # the 135M model may fail "a" too
    assert ran.exit_code == (4 if every_one_failed else 0), ran.output
    assert [r["record"] for r in rows] == ["a", "b"]
    assert rows[1]["status"] == "failed" and "empty" in rows[1]["errors"][0]
    assert {"status", "reasoning_finish", "formatting_finish", "errors", "data"} <= set(rows[0])

    table = list(
        csv.reader(io.StringIO(runner.invoke(app, ["results", "--db", db, "--format", "csv"]).stdout))
    )
    assert table[0][:6] == ["record", "status", "reasoning_finish", "formatting_finish", "attempts", "errors"]
    if rows[0]["data"]:
        assert set(rows[0]["data"]) <= set(table[0])
    assert len(table) == 3

    failed = runner.invoke(app, ["results", "--db", db, "--status", "failed", "--format", "jsonl"])
    assert all(json.loads(line)["status"] == "failed" for line in failed.stdout.splitlines())


@pytest.mark.slow
def test_a_rerun_inside_another_runs_lease_says_what_is_held_and_wait_processes_it(
    prefect_harness, local_engine, monkeypatch, tmp_path
) -> None:
    """Issue 41 point 4: a run started within the lease of one killed a moment ago found every pending
    record held, processed none, said "nothing to do" and exited 0, while 10 of 20 records had no
    result. The holder's state is made by the calls a run makes: it stored the input, claimed every
    record and finished the first; its heartbeat keeps the claims live until the rerun has decided
    (however slowly this machine starts a flow), then stops, as a killed run's does."""
    import logging
    import threading
    from datetime import timedelta

    from sqlalchemy import select

    from formwork.db.claims import claim_records, heartbeat
    from formwork.db.models import ModelCall, Result
    from formwork.db.session import session_factory
    from formwork.db.store import QueuePolicy, save_outcomes, start_run, store_records
    from formwork.flows.batch_extract import source_label
    from formwork.schemas.registry import load_schema
    from formwork.tasks.calls import Outcome
    from formwork.tasks.sources import InputRecord
    from formwork.tasks.validate import Verdict

    for name, value in {"REASONING_MAX_TOKENS": "16", "MAX_ATTEMPTS": "1", "RUN_LEASE_S": "2"}.items():
        monkeypatch.setenv(f"FORMWORK_{name}", value)
    texts = {"a": "Anna: we won!", "b": "Ben: the deploy failed again.", "c": "Chloe: my cat is back!"}
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in texts.items()))
    db, schema, label = f"sqlite:///{tmp_path}/held.db", load_schema("chat_tag"), source_label(str(source))
    sessions = session_factory(db)
    with sessions() as session:
        ids = store_records(session, label, [InputRecord(k, t) for k, t in texts.items()])
        holder = start_run(session, schema, flow="batch_extract", source=label, engine="local",
                           reasoning_model="m", formatting_model="m",
                           setup="smollm2-135m@two-pass")  # fmt: skip  # the rerun's reader (conftest)
        assert claim_records(session, holder, schema, ids, timedelta(seconds=2)) == ids
        done = Outcome(ids[0], Verdict("ok", {"speaker": "Anna", "emotion": "happy", "reply": "x"}), 1)
        save_outcomes(session, holder, schema, [done], QueuePolicy())
    dies = threading.Event()

    class DiesOnceWaitedFor(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "waiting" in record.getMessage():
                waits.append(record.getMessage())
                dies.set()

    def beat() -> None:
        while not dies.wait(0.3):
            with sessions() as session:
                heartbeat(session, holder)

    waits: list[str] = []
    watcher = logging.getLogger("formwork.flows.runner")
    monkeypatch.setattr(watcher, "handlers", [*watcher.handlers, DiesOnceWaitedFor(logging.WARNING)])
    beating = threading.Thread(target=beat, daemon=True)
    beating.start()
    command = ["run", str(source), "--schema", "chat_tag", "--db", db]
    rerun = runner.invoke(app, command)
    assert rerun.exit_code == 3, rerun.output
    assert "nothing to do" not in rerun.output
    assert f"2 records of this input have no result yet: run {holder} holds them until" in rerun.output
    assert "--wait" in rerun.output

    waited = runner.invoke(app, [*command, "--wait"])
    dies.set()
    beating.join()
    assert waited.exit_code == expected_exit(waited.output), waited.output
    assert f"for 2 records that run {holder} holds" in waits[0]
    with sessions() as session:
        results = {r.record_id: r.run_id for r in session.scalars(select(Result))}
        called = set(session.scalars(select(ModelCall.record_id)))
    assert set(results) == set(ids) and results[ids[0]] == holder  # all done; the holder's result stays
    assert called == set(ids[1:])  # the two held records, processed once the holder had let go


@pytest.mark.slow
def test_wait_goes_on_as_soon_as_the_holder_lets_go_not_when_its_lease_ends(
    prefect_harness, local_engine, monkeypatch, tmp_path
) -> None:
    """`--wait` slept until the holder's lease ended even when the holder closed long before (a
    finished run drops its claims): with a 10-minute lease the rerun waited 10 minutes. It now looks
    again every few seconds and goes on once the claims are gone, well inside the lease."""
    import logging
    import threading
    from datetime import timedelta

    from formwork.db.claims import claim_records, release_run
    from formwork.db.models import utcnow
    from formwork.db.session import session_factory
    from formwork.db.store import finish_run, start_run, store_records
    from formwork.flows.batch_extract import source_label
    from formwork.schemas.registry import load_schema
    from formwork.tasks.sources import InputRecord

    lease = timedelta(seconds=600)
    for name, value in {"REASONING_MAX_TOKENS": "16", "MAX_ATTEMPTS": "1", "RUN_LEASE_S": "600"}.items():
        monkeypatch.setenv(f"FORMWORK_{name}", value)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "a", "text": "Anna: we won!"}) + "\n")
    db, schema, label = f"sqlite:///{tmp_path}/held.db", load_schema("chat_tag"), source_label(str(source))
    sessions = session_factory(db)
    with sessions() as session:
        ids = store_records(session, label, [InputRecord("a", "Anna: we won!")])
        run = {"flow": "batch_extract", "source": label, "engine": "local", "reasoning_model": "m"}
        holder = start_run(session, schema, **run, formatting_model="m", setup="smollm2-135m@two-pass")
        assert claim_records(session, holder, schema, ids, lease) == ids
        claimed = utcnow()

    def close_holder() -> None:
        with sessions() as session:
            release_run(session, holder)
            finish_run(session, holder, "crashed")
            session.commit()

    class ClosesTheHolderOnceWaitedFor(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "waiting" in record.getMessage():
                threading.Timer(1.0, close_holder).start()

    watcher = logging.getLogger("formwork.flows.runner")
    monkeypatch.setattr(
        watcher, "handlers", [*watcher.handlers, ClosesTheHolderOnceWaitedFor(logging.WARNING)]
    )
    waited = runner.invoke(app, ["run", str(source), "--schema", "chat_tag", "--db", db, "--wait"])
    assert waited.exit_code == expected_exit(waited.output), waited.output
    assert utcnow() < claimed + lease / 2  # went on when the claims went, not when the lease ran out
    assert "1 records" in waited.output or "1 record" in waited.output


@pytest.mark.slow
def test_a_run_whose_every_record_failed_exits_4_and_says_so(prefect_harness, local_engine, tmp_path) -> None:
    """Issue 54 point 27: a run with nothing to use is never reported as a success (exit 0)."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "text": ""}\n{"id": "b", "text": "   "}\n')
    db = f"sqlite:///{tmp_path}/cli.db"
    ran = runner.invoke(app, ["run", str(source), "--schema", "expense", "--db", db])
    assert ran.exit_code == 4, ran.output
    assert "status failed" in ran.output and "every record of run 1 failed (2 of 2)" in ran.output
