"""The retry queue on both backends: counting, backoff, dead letters, claims, and two racing workers."""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from subprocess import PIPE

import pytest
from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from formwork.db.models import RetryEntry
from formwork.db.queue import list_entries, queue_counts, requeue
from formwork.db.queue_claims import Claim, claim_due, release_stale
from formwork.db.queue_failures import backoff_seconds, record_failure, record_success
from formwork.db.session import session_factory
from formwork.db.store import store_records
from formwork.schemas.registry import load_schema
from formwork.tasks.sources import InputRecord

REPO = Path(__file__).resolve().parents[1]
EXPENSE = load_schema("expense")
EXPENSE_V2 = dataclasses.replace(EXPENSE, version=EXPENSE.version + 1)
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


@pytest.fixture
def session(any_db_url: str) -> Iterator[Session]:
    with session_factory(any_db_url)() as session:
        yield session


@pytest.fixture
def ids(session: Session) -> list[int]:
    return store_records(session, "q.jsonl", [InputRecord(f"k{i}", f"text {i}") for i in range(5)])


def _aware(moment: datetime | None) -> datetime | None:
    return moment if moment is None or moment.tzinfo else moment.replace(tzinfo=UTC)  # SQLite: naive UTC


def _stored(session: Session, entry_id: int) -> RetryEntry:
    session.expire_all()
    entry = session.get(RetryEntry, entry_id)
    assert entry is not None
    return entry


def _fail(session: Session, record_id: int, schema=EXPENSE, now=T0, **options) -> RetryEntry:
    entry = record_failure(session, record_id, schema, f"boom at {now}", now=now, **options)
    session.commit()
    return entry


CEILINGS = [(0, 60), (1, 60), (2, 120), (3, 240), (8, 7680), (9, 15360), (10, 6 * 3600), (50, 6 * 3600)]


@pytest.mark.parametrize(("attempts", "ceiling"), CEILINGS)
def test_backoff_is_fully_jittered_under_a_doubling_capped_ceiling(attempts: int, ceiling: float) -> None:
    rng = random.Random(attempts)
    waits = [backoff_seconds(attempts, rng=rng) for _ in range(400)]
    assert all(0 <= wait <= ceiling for wait in waits)
    assert min(waits) < 0.1 * ceiling and max(waits) > 0.9 * ceiling  # spread over the whole window
    assert 0.4 * ceiling < sum(waits) / len(waits) < 0.6 * ceiling


def test_backoff_never_overflows_and_honours_its_arguments() -> None:
    assert backoff_seconds(10_000) <= 6 * 3600
    assert backoff_seconds(4, base_s=1, cap_s=5, rng=random.Random(1)) <= 5
    assert backoff_seconds(3, rng=random.Random(7)) == backoff_seconds(3, rng=random.Random(7))


def test_record_failure_creates_then_increments_one_entry(session: Session, ids: list[int]) -> None:
    first = _fail(session, ids[0])
    assert (first.attempts, first.state, first.last_error) == (1, "waiting", f"boom at {T0}")
    assert first.schema_source == EXPENSE.source
    assert T0 <= _aware(_stored(session, first.id).next_attempt_at) <= T0 + MINUTE

    later = T0 + 10 * MINUTE
    second = _fail(session, ids[0], now=later)
    stored = _stored(session, first.id)
    assert second.id == first.id
    assert (stored.attempts, stored.state, stored.last_error) == (2, "waiting", f"boom at {later}")
    assert later <= _aware(stored.next_attempt_at) <= later + 2 * MINUTE
    assert session.scalar(select(func.count()).select_from(RetryEntry)) == 1


def test_record_failure_dead_letters_at_max_attempts(session: Session, ids: list[int]) -> None:
    states = [_fail(session, ids[0], max_attempts=3).state for _ in range(4)]
    assert states == ["waiting", "waiting", "dead", "dead"]
    assert claim_due(session, "w", 10, now=T0 + timedelta(days=1)) == []
    assert queue_counts(session) == {"waiting": 0, "claimed": 0, "dead": 1}


def test_record_failure_and_success_stay_in_the_callers_transaction(session: Session, ids: list[int]) -> None:
    record_failure(session, ids[0], EXPENSE, "boom", now=T0)
    session.rollback()
    assert list_entries(session) == []
    entry = _fail(session, ids[0])
    record_success(session, [ids[0]], EXPENSE)
    session.rollback()
    assert [e.id for e in list_entries(session)] == [entry.id]


def test_entries_are_per_record_and_schema_version(session: Session, ids: list[int]) -> None:
    _fail(session, ids[0])
    _fail(session, ids[0])
    _fail(session, ids[0], schema=EXPENSE_V2)
    _fail(session, ids[1])
    found = {(e.record_id, e.schema_version): e.attempts for e in list_entries(session)}
    assert found == {
        (ids[0], EXPENSE.version): 2,
        (ids[0], EXPENSE_V2.version): 1,
        (ids[1], EXPENSE.version): 1,
    }

    record_success(session, [ids[0], ids[4]], EXPENSE)  # ids[4] has nothing queued: nothing happens
    session.commit()
    assert {(e.record_id, e.schema_version) for e in list_entries(session)} == {
        (ids[0], EXPENSE_V2.version),
        (ids[1], EXPENSE.version),
    }


def _place(session: Session, record_id: int, due: datetime, state: str = "waiting") -> int:
    entry = _fail(session, record_id)
    session.execute(
        update(RetryEntry).where(RetryEntry.id == entry.id).values(next_attempt_at=due, state=state)
    )
    session.commit()
    return entry.id


def test_claim_due_takes_only_due_waiting_entries_oldest_first(session: Session, ids: list[int]) -> None:
    older = _place(session, ids[0], T0 - 2 * MINUTE)
    newer = _place(session, ids[1], T0 - MINUTE)
    _place(session, ids[2], T0 + MINUTE)  # not due yet
    _place(session, ids[3], T0 - 5 * MINUTE, state="dead")
    _place(session, ids[4], T0 - 5 * MINUTE, state="claimed")

    assert [c.entry_id for c in claim_due(session, "w1", 1, now=T0)] == [older]
    assert not session.in_transaction()  # the claim is committed: other workers see it at once
    claims = claim_due(session, "w2", 10, now=T0)
    assert claims == [Claim(newer, ids[1], EXPENSE.name, EXPENSE.version, EXPENSE.source, 1, EXPENSE.body)]
    assert claim_due(session, "w3", 10, now=T0) == []
    assert claim_due(session, "w3", 0, now=T0 + timedelta(days=1)) == []

    stored = _stored(session, older)
    assert (stored.state, stored.claimed_by, _aware(stored.claimed_at)) == ("claimed", "w1", T0)
    assert queue_counts(session) == {"waiting": 1, "claimed": 3, "dead": 1}


def test_claim_due_compares_instants_not_wall_clocks(session: Session, ids: list[int]) -> None:
    _place(session, ids[0], T0)
    plus_two = timezone(timedelta(hours=2))  # 14:00+02:00 is T0; SQLite stores no offset
    assert claim_due(session, "w", 5, now=(T0 - timedelta(seconds=1)).astimezone(plus_two)) == []
    assert len(claim_due(session, "w", 5, now=T0.astimezone(plus_two))) == 1


def test_a_new_failure_clears_the_claim(session: Session, ids: list[int]) -> None:
    entry_id = _place(session, ids[0], T0 - MINUTE)
    claim_due(session, "w1", 5, now=T0)
    _fail(session, ids[0], now=T0 + MINUTE)
    stored = _stored(session, entry_id)
    assert (stored.state, stored.claimed_by, stored.claimed_at, stored.attempts) == ("waiting", None, None, 2)


def test_release_stale_puts_old_claims_back(session: Session, ids: list[int]) -> None:
    old, fresh = _place(session, ids[0], T0 - MINUTE), _place(session, ids[1], T0 + 4 * MINUTE)
    claim_due(session, "dead-worker", 5, now=T0)
    claim_due(session, "live-worker", 5, now=T0 + 5 * MINUTE)

    assert release_stale(session, timedelta(minutes=10), now=T0 + 9 * MINUTE) == 0
    assert release_stale(session, timedelta(minutes=10), now=T0 + 11 * MINUTE) == 1
    assert (_stored(session, old).state, _stored(session, old).claimed_by) == ("waiting", None)
    assert _stored(session, fresh).claimed_by == "live-worker"
    assert [c.entry_id for c in claim_due(session, "w2", 5, now=T0 + 12 * MINUTE)] == [old]


def test_requeue_makes_a_dead_entry_due_now_with_fresh_attempts(session: Session, ids: list[int]) -> None:
    for _ in range(5):
        entry = _fail(session, ids[0])
    assert entry.state == "dead"
    later = T0 + timedelta(days=3)
    again = requeue(session, entry.id, now=later)
    assert (again.state, again.attempts, again.claimed_by) == ("waiting", 0, None)
    assert _aware(_stored(session, entry.id).next_attempt_at) == later
    assert [c.attempts for c in claim_due(session, "w", 5, now=later)] == [0]
    with pytest.raises(LookupError):
        requeue(session, entry.id + 1000)


def test_list_entries_filters_orders_and_limits(session: Session, ids: list[int]) -> None:
    c = _place(session, ids[0], T0 + 3 * MINUTE)
    a = _place(session, ids[1], T0 + MINUTE)
    b = _place(session, ids[2], T0 + 2 * MINUTE, state="dead")
    assert [e.id for e in list_entries(session)] == [a, b, c]
    assert [e.id for e in list_entries(session, state="waiting")] == [a, c]
    assert [e.id for e in list_entries(session, limit=1)] == [a]
    assert not session.in_transaction()  # a read ends the transaction it began (SQLite: the write lock)


WORKER = """
import sys, time
from pathlib import Path
from formwork.db.queue_claims import claim_due
from formwork.db.session import session_factory

url, name, folder = sys.argv[1], sys.argv[2], Path(sys.argv[3])
make_session = session_factory(url)
(folder / f"{name}.ready").touch()
while not (folder / "go").exists():
    time.sleep(0.002)
with make_session() as session:
    while batch := claim_due(session, name, 20):
        sys.stdout.write(" ".join(str(claim.entry_id) for claim in batch) + "\\n")
        time.sleep(0.002)  # the model call, outside any transaction: lets the other worker in
"""


def test_two_worker_processes_claim_every_entry_exactly_once(
    any_db_url: str, tmp_path: Path, record_property
) -> None:
    now = datetime.now(UTC)
    with session_factory(any_db_url)() as session:
        record_ids = store_records(session, "race.jsonl", [InputRecord(f"k{i}", "x") for i in range(1000)])
        rows = [
            dict(record_id=rid, schema_name=EXPENSE.name, schema_version=EXPENSE.version,
                 schema_source=EXPENSE.source, attempts=1, last_error="boom",
                 next_attempt_at=now - timedelta(seconds=i), state="waiting", updated_at=now)
            for i, rid in enumerate(record_ids)
        ]  # fmt: skip
        session.execute(insert(RetryEntry), rows)
        session.commit()
        expected = set(session.scalars(select(RetryEntry.id)))
    assert len(expected) == 1000

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", WORKER, any_db_url]
    workers = {
        name: subprocess.Popen(
            [*command, name, str(tmp_path)], cwd=REPO, env=env, text=True, stdout=PIPE, stderr=PIPE
        )
        for name in ("w0", "w1")
    }
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"{name}.ready").exists() for name in workers):
        assert time.monotonic() < deadline, "workers did not start"
        assert all(p.poll() is None for p in workers.values()), [p.communicate() for p in workers.values()]
        time.sleep(0.01)
    (tmp_path / "go").touch()  # both race from here
    claimed: dict[str, list[int]] = {}
    for name, process in workers.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        batches = [line.split() for line in out.splitlines()]
        assert all(len(batch) <= 20 for batch in batches), "a claim took more than its limit"
        claimed[name] = [int(word) for batch in batches for word in batch]

    counts = Counter(entry for entries in claimed.values() for entry in entries)
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    record_property("duplicates", duplicates)
    per_worker = {name: len(entries) for name, entries in claimed.items()}
    record_property("per_worker", per_worker)
    assert duplicates == 0
    assert all(per_worker.values()), f"one worker took everything, so nothing raced: {per_worker}"
    assert set(counts) == expected  # none missing
    with session_factory(any_db_url)() as session:  # the database agrees with what each worker was told
        owner = dict(session.execute(select(RetryEntry.id, RetryEntry.claimed_by)).all())
    assert all(owner[entry] == name for name, entries in claimed.items() for entry in entries)


def test_a_killed_retry_run_gives_its_claims_back_when_it_is_marked_crashed(
    session: Session, ids: list[int], any_db_url: str, local_engine
) -> None:
    """Issue 41 point 8: a `formwork retry` killed outright left its entries `claimed` for
    `claim_timeout_s` (30 minutes), long after the next run had marked it crashed (its 1 s lease here).
    A live worker's claim, even one under a reused name, is left alone."""
    from formwork.db.claims import mark_crashed
    from formwork.flows.run_start import new_context
    from formwork.tasks.settings import Settings

    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    for record_id in ids[:3]:
        _fail(session, record_id, now=an_hour_ago)
    settings = Settings(engine="local", calibration=False, run_lease_s=1)
    engines = (local_engine, local_engine)
    sessions = session_factory(any_db_url)
    killed = claim_due(session, "host:111", 2)
    new_context(sessions, settings, EXPENSE, engines, flow="reprocess_failed", source="expense.json",
                worker="host:111")  # fmt: skip
    time.sleep(1.2)  # then it was killed: no heartbeat, no `finally`
    alive = claim_due(session, "host:111", 1)  # the same name again: a new worker that reuses the pid
    assert mark_crashed(session, timedelta(seconds=1)) == 1  # what the next run does first
    states = {e.id: (e.state, e.claimed_by) for e in list_entries(session)}
    assert {states[c.entry_id] for c in killed} == {("waiting", None)}  # due again at once
    assert states[alive[0].entry_id] == ("claimed", "host:111")
