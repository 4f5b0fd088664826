"""Records in flight: overlapping runs split the pending records instead of extracting each twice.

A run claims a chunk's records in one statement before it calls any model (an upsert that takes a free
record, or one whose claim is stale, and returns what it won), refreshes its claims while it works
(the heartbeat), and releases them in the transaction that stores their results, or at once for a
record another run finished between this run's reading it as pending and its claim. A write is refused
for a record that another run holds: the slower of two workers can never overwrite the faster one's
result. The retry queue's own claims are refreshed by the same heartbeat.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Select, delete, exists, func, select, update
from sqlalchemy.orm import Session

from formwork.db.models import Record, RecordClaim, Result, RetryEntry, Run, utcnow
from formwork.db.queue import release_worker
from formwork.db.session import is_postgres, upsert_insert
from formwork.schemas.registry import Schema

KEY = ["record_id", "schema_name", "schema_version"]


def claim_records(
    session: Session, run_id: int, schema: Schema, record_ids: Sequence[int], stale_after: timedelta
) -> list[int]:
    """Claim the free (or stale) records among `record_ids` for `run_id`; commit; return those won."""
    if not record_ids:
        return []
    now = utcnow()
    table = RecordClaim.__table__
    rows = [{"record_id": i, "schema_name": schema.name, "schema_version": schema.version, "run_id": run_id,
             "claimed_at": now} for i in record_ids]  # fmt: skip
    statement = upsert_insert(session, table)  # rows as parameters: compiled once, not per chunk
    statement = statement.on_conflict_do_update(
        index_elements=KEY,
        set_={"run_id": statement.excluded.run_id, "claimed_at": statement.excluded.claimed_at},
        where=(table.c.claimed_at < now - stale_after) | (table.c.run_id == run_id),
    ).returning(table.c.record_id)
    won = set(session.scalars(statement, rows))
    session.commit()
    return [i for i in record_ids if i in won]


@dataclass(frozen=True)
class Claimed:
    """A chunk's records once claimed: those to process, and those another run holds (not processed)."""

    todo: list[int]
    held: list[int]


def claim_pending(
    session: Session, run_id: int, schema: Schema, record_ids: Sequence[int], stale_after: timedelta,
    redo: bool = False,
) -> Claimed:  # fmt: skip
    """Claim the records, keep those still without a result (all of them to `redo`) and release at once
    the claims won on records that have one; commit.

    A run reads its pending records when it stores its input, and claims them later, a chunk at a
    time: an overlapping run may finish a record in between and release its claim, and the free claim
    row is then won by this run, which has nothing to do for it. Kept, that claim would outlive the
    run by its lease and hold off a retry of the record meanwhile.
    """
    won = claim_records(session, run_id, schema, record_ids, stale_after)
    finished: set[int] = set()
    if not redo:
        finished = set(session.scalars(select(Record.id).where(Record.id.in_(won), _done(schema, run_id))))
    if finished:
        mine = (RecordClaim.run_id == run_id) & RecordClaim.record_id.in_(finished)
        session.execute(delete(RecordClaim).where(_of(schema), mine))
    session.commit()
    taken = set(won)
    return Claimed([i for i in won if i not in finished], [i for i in record_ids if i not in taken])


@dataclass(frozen=True)
class Holders:
    """Records a run left without a result because other runs held them: how many, which runs hold
    them, and when the last of those claims lapses unless its run beats again (None: none is held)."""

    records: int = 0
    runs: tuple[int, ...] = ()
    until: datetime | None = None


def holders(
    session: Session, run_id: int, schema: Schema, record_ids: Sequence[int], stale_after: timedelta
) -> Holders:
    """Of `record_ids`, the records still without a result, and the other runs' claims on them."""
    records, runs, last = 0, set[int](), None
    for start in range(0, len(record_ids), 1000):
        batch = record_ids[start : start + 1000]
        left = select(func.count(Record.id)).where(Record.id.in_(batch), ~_done(schema, run_id))
        records += session.scalar(left) or 0
        claims = session.execute(
            select(RecordClaim.run_id, func.max(RecordClaim.claimed_at))
            .where(_of(schema), RecordClaim.record_id.in_(batch), RecordClaim.run_id != run_id,
                   ~_done(schema, run_id, RecordClaim.record_id))
            .group_by(RecordClaim.run_id)
        ).all()  # fmt: skip
        for holder, claimed_at in claims:
            runs.add(holder)
            aware = claimed_at if claimed_at.tzinfo else claimed_at.replace(tzinfo=UTC)  # SQLite: naive UTC
            last = aware if last is None else max(last, aware)
    return Holders(records, tuple(sorted(runs)), None if last is None else last + stale_after)


def _done(schema: Schema, run_id: int | None = None, record_id: Any = Record.id) -> Any:
    """The record (`record_id`, a column) has a result for this schema version: from the reader (model
    and mode) of run `run_id` where given (another reader reads it again, db.store), else from any."""
    reader = select(Run.setup).where(Run.id == run_id).scalar_subquery()
    return exists().where(
        Result.record_id == record_id,
        Result.schema_name == schema.name,
        Result.schema_version == schema.version,
        *([] if run_id is None else [Result.setup == func.coalesce(reader, "")]),
    )


def _of(schema: Schema) -> Any:
    return (RecordClaim.schema_name == schema.name) & (RecordClaim.schema_version == schema.version)


def unprocessed(source: str, schema: Schema) -> Select:
    """The newest record of each key of `source` that has no result for this schema version.

    Only the newest text of a key counts: an older text of a changed row is history, not work.
    """
    newest = select(func.max(Record.id)).where(Record.source == source).group_by(Record.key)
    return select(Record.id).where(Record.id.in_(newest), ~_done(schema)).order_by(Record.id)


def left_behind(session: Session, source: str, schema: Schema, stale_after: timedelta) -> list[int]:
    """Stored records of `source` with no result and no live claim: a killed run stored them and died.

    A run that reads only new rows (a SQL watermark) would never see them again, so it takes them up.
    """
    live = exists().where(
        RecordClaim.record_id == Record.id,
        RecordClaim.schema_name == schema.name,
        RecordClaim.schema_version == schema.version,
        RecordClaim.claimed_at >= utcnow() - stale_after,
    )
    return list(session.scalars(unprocessed(source, schema).where(~live)))


def release_held(session: Session, run_id: int, schema: Schema, record_ids: Sequence[int]) -> set[int]:
    """Inside the caller's transaction: drop this run's claims; return the records another run holds.

    On PostgreSQL the other run's claim rows are locked until the caller commits, so a claim cannot
    change hands between this check and the write it guards.
    """
    if not record_ids:
        return set()
    of_schema = _of(schema)
    others = select(RecordClaim.record_id).where(
        of_schema, RecordClaim.record_id.in_(record_ids), RecordClaim.run_id != run_id
    )
    if is_postgres(session):
        others = others.with_for_update()
    held_elsewhere = set(session.scalars(others))
    session.execute(
        delete(RecordClaim).where(
            of_schema, RecordClaim.record_id.in_(record_ids), RecordClaim.run_id == run_id
        )
    )
    return held_elsewhere


def release_run(session: Session, run_id: int) -> None:
    """Inside the caller's transaction: drop every record claim of a run known to be over."""
    session.execute(delete(RecordClaim).where(RecordClaim.run_id == run_id))


def heartbeat(session: Session, run_id: int, worker: str | None = None) -> None:
    """The running flow is alive: refresh its run, its record claims and its retry-queue claims; commit."""
    now = utcnow()
    session.execute(update(Run).where(Run.id == run_id).values(heartbeat_at=now))
    session.execute(update(RecordClaim).where(RecordClaim.run_id == run_id).values(claimed_at=now))
    if worker is not None:
        session.execute(
            update(RetryEntry)
            .where(RetryEntry.state == "claimed", RetryEntry.claimed_by == worker)
            .values(claimed_at=now)
        )
    session.commit()


def mark_crashed(session: Session, silent_for: timedelta) -> int:
    """Runs still `running` whose heartbeat stopped more than `silent_for` ago died: mark them `crashed`
    and put back the retry-queue entries a dead reprocessing run held (not `claim_timeout_s` later).

    A run an older version left running has no heartbeat at all (the column came with 0002): its
    start is the last sign of life.
    """
    cutoff = utcnow() - silent_for
    last_seen = func.coalesce(Run.heartbeat_at, Run.started_at)
    statement = (
        update(Run)
        .where(Run.state == "running", last_seen < cutoff)
        .values(state="crashed", finished_at=last_seen)
        .returning(Run.worker, Run.finished_at)
        .execution_options(synchronize_session=False)
    )
    dead = session.execute(statement).all()
    for worker, seen in dead:
        if worker is not None:
            release_worker(session, worker, seen)
    session.commit()
    return len(dead)


def queue_workers(session: Session) -> set[str]:
    """The workers that hold retry-queue claims or own a running run: those a new worker may find dead."""
    holding = select(RetryEntry.claimed_by).where(
        RetryEntry.state == "claimed", RetryEntry.claimed_by.is_not(None)
    )
    running = select(Run.worker).where(Run.state == "running", Run.worker.is_not(None))
    found = {name for name in session.scalars(holding.union(running)) if name}
    session.commit()  # end the read: on SQLite it holds the write lock
    return found


def mark_gone(session: Session, workers: Collection[str]) -> int:
    """Workers known dead now (a process of this host that no longer exists): mark their running runs
    `crashed`, free those runs' records and put every retry-queue claim they held back, without waiting
    out a lease; commit; count the claims put back.

    A heartbeat says a worker is dead only a run lease after it stopped; a pid that is gone says it at
    once, so a `formwork retry` right after a `kill -9` finds the entries due instead of "nothing due".
    """
    if not workers:
        return 0
    now = utcnow()
    dead_runs = session.scalars(
        update(Run)
        .where(Run.state == "running", Run.worker.in_(workers))
        .values(state="crashed", finished_at=func.coalesce(Run.heartbeat_at, Run.started_at))
        .returning(Run.id)
        .execution_options(synchronize_session=False)
    ).all()
    # their records too, or the next worker finds them held by the dead run for its lease
    session.execute(delete(RecordClaim).where(RecordClaim.run_id.in_(dead_runs)))
    released = session.execute(
        update(RetryEntry)
        .where(RetryEntry.state == "claimed", RetryEntry.claimed_by.in_(workers))
        .values(state="waiting", claimed_by=None, claimed_at=None, updated_at=now)
        .execution_options(synchronize_session=False)
    ).rowcount
    session.commit()
    return released
