"""Integrity in the database, on both backends: results tied to their text and schema body, claims that
split work and guard writes, a history that never moves, values that cannot abort a commit."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import select, text

from formwork.db.claims import claim_records, heartbeat, mark_crashed
from formwork.db.keeping import OutageWindow, save_chunk
from formwork.db.models import ModelCall, Record, Result, Run
from formwork.db.queries import result_rows, run_summary
from formwork.db.session import reader_factory, session_factory
from formwork.db.store import (
    QueuePolicy,
    SchemaChanged,
    check_schema_body,
    save_outcomes,
    start_run,
    store_records,
    text_digest,
)
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import CallLog, Outcome
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict

EXPENSE = load_schema("expense")
RUN = dict(flow="test", source="a.jsonl", engine="fake", reasoning_model="m", formatting_model="m")


def _outcome(record_id: int, status: str, data: dict | None = None, output: str = "{}") -> Outcome:
    call = CallLog("formatting", 1, "fake", "0" * 16, 64, "stop", 10, 5, 0.01, output)
    data = data if data is not None else ({"who": "Maria"} if status != "failed" else None)
    verdict = Verdict(status, data, [] if status == "ok" else ["who: wrong"])  # type: ignore[arg-type]
    return Outcome(record_id, verdict, 1, "stop", "stop", retryable=status == "failed", calls=[call])


def _records(session, texts: list[str], source: str = "a.jsonl") -> list[int]:
    return store_records(session, source, [InputRecord(f"k{i}", t) for i, t in enumerate(texts)])


def test_a_result_carries_the_hashes_of_its_text_and_schema_body(any_db_url: str) -> None:
    with session_factory(any_db_url)() as session:
        (record_id,) = _records(session, ["Hotel 300 GBP"])
        run = start_run(session, EXPENSE, **RUN)
        save_outcomes(session, run, EXPENSE, [_outcome(record_id, "ok")], QueuePolicy())
        result = session.scalar(select(Result))
        assert result.text_hash == text_digest("Hotel 300 GBP") == session.get(Record, record_id).text_hash
        assert result.schema_hash == EXPENSE.digest
        assert session.get(Run, run).schema_body == EXPENSE.body


def test_a_schema_edited_without_a_version_bump_is_refused(any_db_url: str) -> None:
    edited = dataclasses.replace(EXPENSE, body={**EXPENSE.body, "description": "edited, same x-version"})
    with session_factory(any_db_url)() as session:
        check_schema_body(session, edited)  # nothing stored yet: any body is fine
        (record_id,) = _records(session, ["Taxi 20 EUR"])
        save_outcomes(session, start_run(session, EXPENSE, **RUN), EXPENSE, [_outcome(record_id, "ok")],
                      QueuePolicy())  # fmt: skip
        check_schema_body(session, EXPENSE)  # the same body again is fine
        with pytest.raises(SchemaChanged, match='bump its "x-version"'):
            check_schema_body(session, edited)
        check_schema_body(session, dataclasses.replace(edited, version=EXPENSE.version + 1))


def test_overlapping_runs_split_the_records_and_stale_claims_are_taken_over(any_db_url: str) -> None:
    with session_factory(any_db_url)() as session:
        ids = _records(session, [f"text {i}" for i in range(6)])
        first, second = start_run(session, EXPENSE, **RUN), start_run(session, EXPENSE, **RUN)
        won_first = claim_records(session, first, EXPENSE, ids[:4], timedelta(minutes=30))
        won_second = claim_records(session, second, EXPENSE, ids, timedelta(minutes=30))
        assert won_first == ids[:4] and won_second == ids[4:]
        heartbeat(session, first)  # a live run keeps its claims
        assert claim_records(session, second, EXPENSE, ids[:4], timedelta(seconds=60)) == []
        time.sleep(0.05)
        assert claim_records(session, second, EXPENSE, ids[:2], timedelta(seconds=0.01)) == ids[:2]


def test_a_late_worker_never_overwrites_a_result_another_run_holds_or_made_ok(any_db_url: str) -> None:
    with session_factory(any_db_url)() as session:
        ids = _records(session, ["Taxi 20 EUR", "Lunch 12 USD"])
        late, fast = start_run(session, EXPENSE, **RUN), start_run(session, EXPENSE, **RUN)
        claim_records(session, late, EXPENSE, ids, timedelta(minutes=30))
        time.sleep(0.05)
        assert claim_records(session, fast, EXPENSE, ids, timedelta(seconds=0.01)) == ids  # late stalled
        save_outcomes(session, fast, EXPENSE, [_outcome(ids[0], "ok")], QueuePolicy())  # releases ids[0]
        # the late run fails both: ids[1] is still held by `fast`; ids[0] is free but already ok
        save_outcomes(session, late, EXPENSE, [_outcome(i, "failed") for i in ids], QueuePolicy())
        results = {r.record_id: r for r in session.scalars(select(Result))}
        assert results[ids[0]].status == "ok" and results[ids[0]].data == {"who": "Maria"}
        assert ids[1] not in results  # never written by a run that did not hold it
        assert session.scalar(select(ModelCall.id).where(ModelCall.run_id == late)) is not None  # calls kept
        assert [r["status"] for r in result_rows(session, late)] == ["failed", "failed"]  # its history


def test_a_runs_results_stay_what_it_produced_after_reprocessing(any_db_url: str) -> None:
    with session_factory(any_db_url)() as session:
        ids = _records(session, ["Taxi 20 EUR"])
        first = start_run(session, EXPENSE, **RUN)
        save_outcomes(session, first, EXPENSE, [_outcome(ids[0], "failed")], QueuePolicy())
        second = start_run(session, EXPENSE, **{**RUN, "flow": "reprocess_failed"})
        save_outcomes(session, second, EXPENSE, [_outcome(ids[0], "ok")], QueuePolicy())
        assert [r["status"] for r in result_rows(session, first)] == ["failed"]
        assert run_summary(session, first).statuses == {"failed": 1}
        assert [r["status"] for r in result_rows(session, second)] == ["ok"]
        assert [r["status"] for r in result_rows(session)] == ["ok"]  # the current answer


def test_the_run_summary_counts_ungrounded_values_and_nulled_fields(any_db_url: str) -> None:
    with session_factory(any_db_url)() as session:
        ids = _records(session, ["Taxi 20 EUR", "Lunch 12 USD"])
        run = start_run(session, EXPENSE, **RUN)
        partial = _outcome(ids[0], "partial", data={"who": None})
        partial.verdict.nulled = ["who"]
        partial.verdict.evidence = [{"path": "who", "grounded": False}, {"path": "amount", "grounded": True}]
        save_outcomes(session, run, EXPENSE, [partial, _outcome(ids[1], "ok")], QueuePolicy())
        summary = run_summary(session, run)
        assert (summary.ungrounded, summary.nulled, summary.statuses) == (1, 1, {"partial": 1, "ok": 1})


def test_a_run_whose_heartbeat_stopped_is_marked_crashed(any_db_url: str) -> None:
    with session_factory(any_db_url)() as session:
        dead, alive = start_run(session, EXPENSE, **RUN), start_run(session, EXPENSE, **RUN)
        time.sleep(0.3)
        heartbeat(session, alive)
        assert mark_crashed(session, timedelta(seconds=0.2)) == 1
        session.expire_all()
        assert session.get(Run, dead).state == "crashed" and session.get(Run, alive).state == "running"


def test_nul_and_lone_surrogates_are_stored_not_fatal(any_db_url: str) -> None:
    with session_factory(any_db_url)() as session:
        ids = store_records(session, "a.jsonl", [InputRecord("id-\ud800\x00", "Taxi \x00 20 EUR")])
        outcome = _outcome(ids[0], "ok", data={"who": "Ma\x00ria\udc80"}, output='{"who":"Ma\x00ria"}')
        save_outcomes(session, start_run(session, EXPENSE, **RUN), EXPENSE, [outcome], QueuePolicy())
        result = session.scalar(select(Result))
        assert result.data == {"who": "Ma\ufffdria\ufffd"}
        assert session.scalar(select(ModelCall.output)) == '{"who":"Ma\ufffdria"}'
        assert session.get(Record, ids[0]).key == "id-\ufffd\ufffd"


@pytest.mark.postgres
def test_a_chunk_whose_commit_fails_is_stored_record_by_record(postgres_db_url: str) -> None:
    """PostgreSQL's json type refuses NaN (SQLite stores it): a real commit failure, on cue."""
    sessions = session_factory(postgres_db_url)
    with sessions() as session:
        ids = _records(session, ["Taxi 20 EUR", "Lunch 12 USD", "Hotel 300 GBP"])
        run = start_run(session, EXPENSE, **RUN)
    poisoned = _outcome(ids[1], "ok", data={"amount": float("nan")})
    save_chunk(sessions, run, EXPENSE, [_outcome(ids[0], "ok"), poisoned, _outcome(ids[2], "ok")],
               QueuePolicy(), OutageWindow(10))  # fmt: skip
    with sessions() as session:
        results = {r.record_id: r for r in session.scalars(select(Result))}
        assert results[ids[0]].status == results[ids[2]].status == "ok"
        assert results[ids[1]].status == "failed" and "could not store" in results[ids[1]].errors[0]
        assert session.scalar(select(ModelCall.id).where(ModelCall.record_id == ids[1])) is not None


def test_a_group_written_again_after_its_commit_stores_nothing_twice(any_db_url: str) -> None:
    """A connection that drops during COMMIT may lose the answer of a commit the server made: the write
    is tried again (or a journal holding the group is replayed), and must not store its calls twice."""
    sessions = session_factory(any_db_url)
    with sessions() as session:
        ids = _records(session, ["Taxi 20 EUR", "Lunch 12 USD"])
        run = start_run(session, EXPENSE, **RUN)
    save_chunk(sessions, run, EXPENSE, [_outcome(ids[0], "ok")], QueuePolicy(), OutageWindow(10))
    group = [_outcome(ids[0], "ok"), _outcome(ids[1], "failed")]  # the first one committed already
    save_chunk(sessions, run, EXPENSE, group, QueuePolicy(), OutageWindow(10), replay=True)
    with sessions() as session:
        calls = sorted(session.scalars(select(ModelCall.record_id)))
        history = sorted(r["record"] for r in result_rows(session, run))
    assert calls == ids and history == ["k0", "k1"]  # one call and one history row per record


def test_a_reader_never_blocks_a_writer(db_url: str) -> None:
    with session_factory(db_url)() as session:
        _records(session, ["Taxi 20 EUR"])
    reader = reader_factory(db_url)()
    reader.execute(select(Record.id)).all()  # a read transaction stays open
    assert reader.in_transaction()
    done = threading.Event()

    def write() -> None:
        with session_factory(db_url)() as session:
            _records(session, ["Lunch 12 USD"])
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(timeout=10)
    reader.close()
    assert done.is_set(), "a writer waited for a session that only read"


@pytest.mark.postgres
def test_workers_migrating_a_new_postgres_database_at_once_all_succeed(postgres_db_url: str) -> None:
    """SQLite serialises migrations with BEGIN IMMEDIATE; this pins PostgreSQL's advisory lock."""
    any_db_url = postgres_db_url
    code = "import sys; from db.session import get_engine; get_engine(sys.argv[1])"
    workers = [subprocess.Popen([sys.executable, "-c", code, any_db_url], stderr=subprocess.PIPE, text=True)
               for _ in range(3)]  # fmt: skip
    errors = [w.communicate(timeout=120)[1] for w in workers]
    assert [w.returncode for w in workers] == [0, 0, 0], errors
    with session_factory(any_db_url)() as session:
        assert session.scalar(text("SELECT version_num FROM alembic_version")) is not None
