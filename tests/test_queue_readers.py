"""Retry-queue entries belong to the reader (NAME@MODE, runs.setup) whose run queued them: results are kept
per reader (migration 0017), so another reader's success on a record must not settle this reader's
entry, and `formwork retry` must read an entry with the reader it waits for, not the worker's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import delete, select, update

from formwork.db.decisions import mark_ok
from formwork.db.models import Result, RetryEntry, Run, utcnow
from formwork.db.queue import claim_due, record_failure
from formwork.db.session import alembic_config, session_factory
from formwork.db.store import QueuePolicy, save_outcomes, start_run, store_records
from formwork.flows.batch_extract import batch_extract
from formwork.flows.reprocess_failed import reprocess_failed
from formwork.flows.reprocess_readers import ReaderUnavailable, retry_settings
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import CallLog, Outcome
from formwork.tasks.settings import Settings
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict

EXPENSE = load_schema("expense")
ONE_PASS, TWO_PASS = "smollm2-135m@one-pass", "smollm2-135m@two-pass"
READINGS = "smollm2-135m@two-readings"
FIELDS = dict(flow="test", source="a.jsonl", engine="local", reasoning_model="m", formatting_model="m")


def _outcome(record_id: int, status: str) -> Outcome:
    call = CallLog("formatting", 1, "m", "0" * 32, 64, "stop", 10, 5, 0.01, "{}")
    errors = [] if status == "ok" else ["who: missing"]
    verdict = Verdict(status, {"who": "Maria"} if status == "ok" else {}, errors)  # type: ignore[arg-type]
    return Outcome(record_id, verdict, 1, reasoning_finish="stop", formatting_finish="stop", calls=[call])


def _entries(session) -> list[tuple[int, str, str, int]]:  # type: ignore[no-untyped-def]
    rows = session.execute(
        select(RetryEntry.record_id, RetryEntry.setup, RetryEntry.state, RetryEntry.attempts).order_by(
            RetryEntry.id
        )
    ).all()
    return [tuple(row) for row in rows]


def test_another_readers_success_keeps_this_readers_entry(db_url: str) -> None:
    """Reader A fails a record (its entry is queued), reader B reads it fine: A's entry stays; B's own
    a third reader's failure adds an entry of its own beside A's, and A's success settles only A's."""
    with session_factory(db_url)() as session:
        ids = store_records(session, "a.jsonl", [InputRecord("a", "Taxi 35 EUR, Tom", {})])
        first = start_run(session, EXPENSE, setup=ONE_PASS, **FIELDS)
        save_outcomes(session, first, EXPENSE, [_outcome(ids[0], "failed")], QueuePolicy())
        assert [e[:2] for e in _entries(session)] == [(ids[0], ONE_PASS)]

        other = start_run(session, EXPENSE, setup=TWO_PASS, **FIELDS)
        save_outcomes(session, other, EXPENSE, [_outcome(ids[0], "ok")], QueuePolicy())
        assert _entries(session) == [(ids[0], ONE_PASS, "waiting", 1)]  # A's entry, untouched

        third = start_run(session, EXPENSE, setup=READINGS, **FIELDS)
        save_outcomes(session, third, EXPENSE, [_outcome(ids[0], "failed")], QueuePolicy())
        assert [e[:2] for e in _entries(session)] == [(ids[0], ONE_PASS), (ids[0], READINGS)]
        again = start_run(session, EXPENSE, setup=ONE_PASS, **FIELDS)
        save_outcomes(session, again, EXPENSE, [_outcome(ids[0], "ok")], QueuePolicy())
        assert [e[:2] for e in _entries(session)] == [(ids[0], READINGS)]
        session.execute(update(RetryEntry).values(next_attempt_at=utcnow()))  # due now
        session.commit()
        assert [c.setup for c in claim_due(session, "w", 10)] == [READINGS]  # who reads it again
    from typer.testing import CliRunner

    from formwork.flows.cli import app

    shown = CliRunner().invoke(app, ["queue", "--db", db_url], env={"COLUMNS": "240"})
    assert shown.exit_code == 0 and f"retry by {READINGS}" in shown.output


def test_a_retry_is_read_with_the_reader_its_entry_was_queued_for() -> None:
    """The worker's own model and mode are not the entry's: the entry's reader is used."""
    worker = Settings(engine="local", local_model="qwen2.5-coder-1.5b", mode="two-readings")
    reading = retry_settings(worker, TWO_PASS)
    assert (reading.local_model, reading.mode) == ("smollm2-135m", "two-pass")
    assert retry_settings(worker, "") == worker  # an entry from before readers were kept: the worker's


def _insert(connection: sa.Connection, table: str, **values: object) -> int:
    columns, marks = ", ".join(values), ", ".join(f":{name}" for name in values)
    return connection.execute(sa.text(f"INSERT INTO {table} ({columns}) VALUES ({marks}) RETURNING id"),
                              values).scalar_one()  # fmt: skip


def test_the_migration_gives_existing_entries_their_rows_reader_and_the_chain_is_whole(
    tmp_path: Path,
) -> None:
    """A fresh database migrates through the chain to 0018; an entry queued before it takes the reader of
    its record's latest row ("" where none), and a downgrade keeps one entry per record."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    assert ScriptDirectory.from_config(alembic_config(url)).get_heads() == ["0019_escalated_calibration"]
    with sa.create_engine(url).begin() as connection:
        config = alembic_config(url)
        config.attributes["connection"] = connection
        command.upgrade(config, "0018_queue_reader-1")  # the database as the version before left it
        now = "2026-01-01 00:00:00"
        run = _insert(connection, "runs", flow="batch_extract", source="a.jsonl", engine="local",
                      schema_name="e", schema_version=1, schema_hash="h", reasoning_model="m",
                      formatting_model="m", state="finished", started_at=now, setup=ONE_PASS)  # fmt: skip
        record = {"source": "a.jsonl", "text_hash": "t", "text": "x", "meta": "{}", "created_at": now}
        answer = dict(schema_name="expense", schema_version=1, text_hash="t", schema_hash="h",
                      status="failed", errors="[]", nulled="[]", retryable=True, attempts=1,
                      run_id=run)  # fmt: skip
        entry = dict(schema_name="expense", schema_version=1, schema_source="expense", schema_hash="h",
                     attempts=1, last_error="e", next_attempt_at=now, state="waiting",
                     kind="retry")  # fmt: skip
        read, unread = (_insert(connection, "records", key=key, **record) for key in ("a", "b"))
        _insert(connection, "results", record_id=read, setup=TWO_PASS, updated_at=now, **answer)
        _insert(
            connection, "results", record_id=read, setup=ONE_PASS, updated_at="2026-01-02 00:00:00", **answer
        )
        for record_id in (read, unread):
            _insert(connection, "retry_queue", record_id=record_id, updated_at=now, **entry)
        command.upgrade(config, "head")
        found = connection.execute(sa.text("SELECT record_id, setup FROM retry_queue ORDER BY id")).all()
        assert [tuple(row) for row in found] == [(read, ONE_PASS), (unread, "")]  # the latest row's reader
        _insert(connection, "retry_queue", record_id=read, setup=TWO_PASS,
                **entry | {"next_attempt_at": now, "updated_at": "2026-01-03 00:00:00"})  # fmt: skip
        command.downgrade(config, "0018_queue_reader-1")  # one entry per record again: the newer stays
        kept = connection.execute(sa.text("SELECT record_id, attempts FROM retry_queue ORDER BY id")).all()
        assert [row[0] for row in kept] == [unread, read]
        command.upgrade(config, "head")  # and up again


def test_a_person_settling_one_readers_row_keeps_the_other_readers_entry(db_url: str) -> None:
    """`formwork settle` marks one reader's row ok: that reader's entry goes, another reader's stays."""
    with session_factory(db_url)() as session:
        ids = store_records(session, "a.jsonl", [InputRecord("a", "Taxi 35 EUR, Tom", {})])
        for setup in (ONE_PASS, TWO_PASS):
            run = start_run(session, EXPENSE, setup=setup, **FIELDS)
            save_outcomes(session, run, EXPENSE, [_outcome(ids[0], "failed")], QueuePolicy())
        settled = session.scalars(select(Result).where(Result.setup == ONE_PASS)).one()
        mark_ok(session, settled)
        session.commit()
        assert [e[:2] for e in _entries(session)] == [(ids[0], TWO_PASS)]


def test_formwork_retry_reads_an_entry_with_its_own_reader_not_the_workers(
    prefect_harness, local_engine, monkeypatch, write_jsonl, db_url: str
) -> None:
    """The bundled 135M in one-pass fails a record (formatting budget of 3 tokens); a worker set to
    two-pass retries it: the retry run reads as one-pass, the entry's reader. An entry of a reader this
    worker cannot open (another server's model) is given back, waiting, never read by the worker's."""
    monkeypatch.setenv("FORMWORK_MODE", "one-pass")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("FORMWORK_FORMAT_MAX_TOKENS", "3")
    summary = batch_extract(str(write_jsonl([{"id": "a", "text": "Anna: we won the finals!!!"}])), "chat_tag",
                            db_url=db_url)  # fmt: skip
    assert summary.statuses == {"failed": 1}
    monkeypatch.delenv("FORMWORK_FORMAT_MAX_TOKENS")
    sessions = session_factory(db_url)
    with sessions() as session:
        assert [e[1:3] for e in _entries(session)] == [(ONE_PASS, "waiting")]
        session.execute(update(RetryEntry).values(next_attempt_at=utcnow()))
        session.commit()
    (retried,) = reprocess_failed(db_url=db_url, overrides={"mode": "two-pass", "format_max_tokens": 1024})
    with sessions() as session:
        assert session.get(Run, retried.run_id).setup == ONE_PASS  # not the worker's two-pass
        assert {setup for _, setup, _, _ in _entries(session)} <= {ONE_PASS}
        session.execute(delete(RetryEntry))
        record_failure(session, 1, load_schema("chat_tag"), "e", setup="served-model@one-pass")
        session.execute(update(RetryEntry).values(next_attempt_at=utcnow()))
        session.commit()
    with pytest.raises(ReaderUnavailable) as refused:
        reprocess_failed(db_url=db_url)
    said = str(refused.value)
    assert "\n" not in said and "reader served-model@one-pass cannot be opened" in said, said
    assert "read as smollm2-135m@one-pass" in said and "formwork retry` with its settings" in said, said
    with sessions() as session:
        assert [e[1:3] for e in _entries(session)] == [("served-model@one-pass", "waiting")]
