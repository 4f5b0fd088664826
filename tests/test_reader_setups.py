"""Issue 51 point 4 (its rest) and the settled-later defect: results are keyed by the reader that made them
(model and mode, NAME@MODE), so another model or mode reads the records again and both rows are kept;
`formwork results` shows the latest run's rows or a reader's (`--model`); a row a person settled after
its run says so under `--run N`, and shows its status now otherwise.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import select
from typer.testing import CliRunner

from formwork.db.claims import claim_pending
from formwork.db.decisions import mark_ok
from formwork.db.models import Decision, Result
from formwork.db.queries import result_rows
from formwork.db.session import alembic_config, session_factory
from formwork.db.store import QueuePolicy, records_without_result, save_outcomes, start_run, store_records
from formwork.flows.cli import app
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import CallLog, Outcome
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict
from tests.run_exit import expected_exit

runner = CliRunner()
EXPENSE = load_schema("expense")
ONE_PASS, TWO_PASS = "smollm2-135m@one-pass", "smollm2-135m@two-pass"
FIELDS = dict(flow="test", source="a.jsonl", engine="local", reasoning_model="m", formatting_model="m")


def _outcome(record_id: int, status: str) -> Outcome:
    call = CallLog("formatting", 1, "m", "0" * 32, 64, "stop", 10, 5, 0.01, "{}")
    verdict = Verdict(status, {"who": "Maria"}, [] if status == "ok" else ["who: unsure"])  # type: ignore[arg-type]
    return Outcome(record_id, verdict, 1, reasoning_finish="stop", formatting_finish="stop", calls=[call])


def _jsonl(db: str, *args: str) -> list[dict]:
    shown = runner.invoke(app, ["results", "--db", db, "--format", "jsonl", *args])
    assert shown.exit_code == 0, shown.output
    return [json.loads(line) for line in shown.stdout.splitlines()]


def test_another_mode_of_the_same_model_reads_the_records_again_and_both_rows_are_kept(
    prefect_harness, local_engine, tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "text": "Taxi 35 EUR, paid by Tom"}\n')
    db = f"sqlite:///{tmp_path}/cli.db"

    def run(model: str) -> str:
        ran = runner.invoke(app, ["run", str(source), "--schema", "expense", "--db", db, "--model", model])
        assert ran.exit_code == expected_exit(ran.output), ran.output
        return " ".join(ran.output.split())

    first = run(ONE_PASS)
    assert "1 records" in first and f"{ONE_PASS}, calibration" in first
    again = run(ONE_PASS)  # the same reader: done already
    assert "0 records" in again and "nothing to do" in again
    second = run(TWO_PASS)  # another mode: read again, never "nothing to do"
    assert "1 records" in second and "nothing to do" not in second and f"{TWO_PASS}, calibration" in second

    with session_factory(db)() as session:
        rows = session.execute(select(Result.setup, Result.run_id).order_by(Result.id)).all()
    assert [tuple(row) for row in rows] == [(ONE_PASS, 1), (TWO_PASS, 3)]

    assert [(r["run"], r["setup"]) for r in _jsonl(db)] == [(3, TWO_PASS)]  # the latest run's rows
    assert [(r["run"], r["setup"]) for r in _jsonl(db, "--model", ONE_PASS)] == [(1, ONE_PASS)]
    assert [r["run"] for r in _jsonl(db, "--model", "smollm2-135m")] == [3]  # NAME alone: any mode
    unknown = runner.invoke(app, ["results", "--db", db, "--model", "qwen2.5-coder-1.5b@one-pass"])
    said = " ".join(unknown.output.split())
    assert unknown.exit_code == 2 and f"its readers: {ONE_PASS}, {TWO_PASS}" in said, unknown.output
    both = runner.invoke(app, ["results", "--db", db, "--model", ONE_PASS, "--run", "1"])
    assert both.exit_code == 2 and "not both" in both.output


def test_a_record_is_done_only_for_the_reader_that_read_it(db_url: str) -> None:
    """The store and the claims: a run of another setup finds the records pending, claims and keeps
    them, and writes a row of its own beside the first reader's, which stays as it was."""
    with session_factory(db_url)() as session:
        ids = store_records(session, "a.jsonl", [InputRecord("a", "Taxi 35 EUR, Tom", {})])
        first = start_run(session, EXPENSE, setup=ONE_PASS, **FIELDS)
        save_outcomes(session, first, EXPENSE, [_outcome(ids[0], "ok")], QueuePolicy())
        again = start_run(session, EXPENSE, setup=ONE_PASS, **FIELDS)
        other = start_run(session, EXPENSE, setup=TWO_PASS, **FIELDS)
        assert records_without_result(session, ids, EXPENSE, again) == []
        assert records_without_result(session, ids, EXPENSE, other) == ids
        assert claim_pending(session, again, EXPENSE, ids, timedelta(minutes=5)).todo == []
        assert claim_pending(session, other, EXPENSE, ids, timedelta(minutes=5)).todo == ids
        save_outcomes(session, other, EXPENSE, [_outcome(ids[0], "partial")], QueuePolicy())
        kept = session.execute(select(Result.setup, Result.status, Result.run_id).order_by(Result.id)).all()
        assert [tuple(k) for k in kept] == [(ONE_PASS, "ok", first), (TWO_PASS, "partial", other)]


def _insert(connection: sa.Connection, table: str, **values: object) -> int:
    columns = ", ".join(values)
    marks = ", ".join(f":{name}" for name in values)
    insert = sa.text(f"INSERT INTO {table} ({columns}) VALUES ({marks}) RETURNING id")
    found = connection.execute(insert, values)
    return found.scalar_one()


def test_the_migration_keys_existing_results_by_their_runs_reader_and_the_chain_is_whole(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = sa.create_engine(url)
    heads = ScriptDirectory.from_config(alembic_config(url)).get_heads()
    assert len(heads) == 1  # one chain (0018_queue_reader follows this migration)
    with engine.begin() as connection:
        config = alembic_config(url)
        config.attributes["connection"] = connection
        command.upgrade(config, "0017_reader_setup-1")  # the database as the version before left it
        now = "2026-01-01 00:00:00"
        common = dict(flow="batch_extract", source="a.jsonl", schema_name="expense", schema_version=1,
                      schema_hash="h", engine="local", reasoning_model="m", state="finished",
                      started_at=now)  # fmt: skip
        key = {"model": "SmolLM2-135M-Instruct.Q4_1", "mode": "one-pass",
               "model_hash": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"}  # fmt: skip
        keyed = _insert(connection, "runs", formatting_model="SmolLM2-135M-Instruct.Q4_1",
                        confidence=json.dumps({"calibration": None, "key": key}), **common)  # fmt: skip
        off = _insert(connection, "runs", formatting_model="x", **common)
        record = {"source": "a.jsonl", "text_hash": "t", "text": "x", "meta": "{}", "created_at": now}
        answer = dict(schema_name="expense", schema_version=1, text_hash="t", schema_hash="h", status="ok",
                      errors="[]", nulled="[]", retryable=False, attempts=1, updated_at=now)  # fmt: skip
        for run, name in ((keyed, "a"), (off, "b")):
            record_id = _insert(connection, "records", key=name, **record)
            _insert(connection, "results", record_id=record_id, run_id=run, **answer)
        command.upgrade(config, "head")
        runs = dict(connection.execute(sa.text("SELECT id, setup FROM runs")).all())
        results = dict(connection.execute(sa.text("SELECT run_id, setup FROM results")).all())
        assert runs == {keyed: ONE_PASS, off: None}
        assert results == {keyed: ONE_PASS, off: ""}  # a run with no key left no mode: read once more
        first = connection.execute(sa.text("SELECT record_id FROM results WHERE run_id = :r"), {"r": keyed})
        _insert(connection, "results", record_id=first.scalar_one(), run_id=off, setup=TWO_PASS,
                **answer | {"updated_at": "2026-01-02 00:00:00"})  # fmt: skip  # a second reader's row
        command.downgrade(config, "0017_reader_setup-1")  # back to one row per record: the newer stays
        kept = connection.execute(sa.text("SELECT run_id FROM results ORDER BY id")).scalars().all()
        assert kept == [off, off]


def test_a_row_settled_after_its_run_says_so_under_run_n_and_shows_its_state_now_otherwise(
    db_url: str,
) -> None:
    with session_factory(db_url)() as session:
        ids = store_records(session, "a.jsonl", [InputRecord("a", "Taxi 35 EUR, Tom", {}),
                                                 InputRecord("b", "Bus 2 EUR, Ann", {})])  # fmt: skip
        run = start_run(session, EXPENSE, setup=ONE_PASS, **FIELDS)
        save_outcomes(session, run, EXPENSE, [_outcome(i, "partial") for i in ids], QueuePolicy())
        session.add(Decision(record_id=ids[0], schema_name=EXPENSE.name, schema_version=EXPENSE.version,
                             run_id=run, field="who", action="accept", value="Maria", model_value="Maria",
                             model_state="unsure", who="ann"))  # fmt: skip
        mark_ok(session, session.scalars(select(Result).where(Result.record_id == ids[0])).one())
        session.commit()
        rows = {r["record"]: r for r in result_rows(session, run)}
    seen = {key: (row["status"], row["settled_later"], row["status_now"]) for key, row in rows.items()}
    assert seen == {"a": ("partial", True, "ok"), "b": ("partial", False, "partial")}

    by_run = {r["record"]: r for r in _jsonl(db_url, "--run", str(run))}
    assert by_run["a"]["status"] == "partial" and by_run["a"]["settled_later"] is True
    latest = {r["record"]: r for r in _jsonl(db_url)}  # not filtered by run: the latest state
    assert latest["a"]["status"] == "ok" and latest["b"]["status"] == "partial"

    table = runner.invoke(app, ["results", "--db", db_url, "--run", str(run)])
    lines = {line.split()[0]: line for line in table.output.splitlines() if line[:1] in "ab"}
    assert "partial" in lines["a"] and "(settled later: ok now)" in lines["a"], table.output
    assert "settled" not in lines["b"]
    plain = runner.invoke(app, ["results", "--db", db_url])
    marked = [line for line in plain.output.splitlines() if line.startswith("a ")]
    assert " ok " in marked[0] and "(settled by a person)" in marked[0], plain.output
    sheet = runner.invoke(app, ["results", "--db", db_url, "--run", str(run), "--format", "csv"])
    cells = {row["record"]: row for row in csv.DictReader(io.StringIO(sheet.stdout))}
    assert [(c["status"], c["settled_later"]) for c in cells.values()] == [("partial", "ok"), ("partial", "")]


def test_settling_a_run_marks_the_row_of_its_reader_not_a_later_readers(db_url: str) -> None:
    from formwork.db.decisions import current_result
    from formwork.db.models import Run

    with session_factory(db_url)() as session:
        ids = store_records(session, "a.jsonl", [InputRecord("a", "Taxi 35 EUR, Tom", {})])
        first = start_run(session, EXPENSE, setup=ONE_PASS, **FIELDS)
        save_outcomes(session, first, EXPENSE, [_outcome(ids[0], "partial")], QueuePolicy())
        later = start_run(session, EXPENSE, setup=TWO_PASS, **FIELDS)
        save_outcomes(session, later, EXPENSE, [_outcome(ids[0], "partial")], QueuePolicy())
        for run in (first, later):
            found = current_result(session, ids[0], EXPENSE.name, EXPENSE.version, session.get(Run, run))
            assert found is not None and found.run_id == run
