"""The retry queue: failed records wait with exponential backoff, workers claim them, the dead stay put.

- `record_failure` / `record_success` run inside the caller's chunk transaction and never commit, so a
  result and its queue entry are written (or rolled back) together.
- `claim_due` commits at once: a claim must be visible to other workers before the slow model call, and
  the model must never be called inside an open transaction. A worker that dies leaves its claims
  behind; `release_stale` puts them back after a timeout.
- Claiming is one statement on both backends, so two workers never take the same entry. PostgreSQL:
  `WITH due AS MATERIALIZED (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED) UPDATE ... WHERE id IN (SELECT
  id FROM due) RETURNING`. SQLite: the same without the lock clause, under the `BEGIN IMMEDIATE` that
  db.session issues (one writer at a time). A SELECT followed by a separate UPDATE is the trap: on
  SQLite with default driver settings it handed the same rows to two workers.
- An escalation stays one until it is settled: a stronger reader that errs or fails the row counts a try
  and backs off, and the entry still names that reader (a plain retry would pay the first one again).
- An entry whose record's text changed since it was queued is settled `stale` (with why), never read:
  its source no longer holds that text, and the new text is a record of its own.
- Times are timezone-aware UTC; `now` is the queue's clock (injectable for tests), `updated_at` is
  always the wall clock. SQLite stores DateTime(timezone=True) without an offset and reads it
  back naive, so every time is converted to UTC before it is written or compared: stored wall clocks
  are then UTC on both backends and compare correctly in SQL.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import case, delete, func, select, update
from sqlalchemy.orm import Session

from formwork.db.models import Record, RetryEntry, RunResult, utcnow
from formwork.db.session import is_postgres, upsert_insert
from formwork.schemas.registry import Schema

STATES = ("waiting", "claimed", "dead")  # and `stale`, shown where there is one


@dataclass(frozen=True)
class Claim:
    """What a worker needs to retry one entry; plain values, so it outlives the session."""

    entry_id: int
    record_id: int
    schema_name: str
    schema_version: int
    schema_source: str
    attempts: int
    schema_body: dict[str, Any] | None = None
    kind: str = "retry"  # retry: the same reader again; escalation: the stronger one, `escalate_to`
    escalate_to: str | None = None


def _utc(moment: datetime | None) -> datetime:
    """Aware UTC; a naive time is taken to be UTC already (that is how SQLite hands them back)."""
    if moment is None:
        return utcnow()
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def backoff_seconds(
    attempts: int, base_s: float = 60, cap_s: float = 6 * 3600, rng: random.Random | None = None
) -> float:
    """Seconds to wait before try `attempts + 1`: uniform in [0, min(cap, base * 2**(attempts-1))].

    Full jitter (not a fixed delay plus noise) spreads a burst of failures, such as a model server that
    went down for a minute, over the whole window instead of retrying them all at the same moment.
    """
    exponent = min(max(attempts, 1) - 1, 62)  # any real cap is reached long before; no float overflow
    ceiling = min(cap_s, base_s * 2.0**exponent)
    return (rng or random).uniform(0.0, ceiling)


def record_failure(
    session: Session,
    record_id: int,
    schema: Schema,
    error: str,
    *,
    max_attempts: int = 5,
    now: datetime | None = None,
    kind: str = "retry",
    escalate_to: str | None = None,
) -> RetryEntry:
    """Count one more failed try of (record, schema version); dead-letter it at `max_attempts`. `kind`
    escalation: the row waits for the stronger reader `escalate_to`, not for the same one again.

    One upsert increments the counter in SQL, so two failures recorded at once cannot both read the
    old count; the new count then decides the state and the backoff. Flushed, not committed: it belongs
    to the caller's chunk transaction.
    """
    now = _utc(now)
    statement = upsert_insert(session, RetryEntry).values(
        record_id=record_id, schema_name=schema.name, schema_version=schema.version,
        schema_source=schema.source, schema_hash=schema.digest, schema_body=schema.body or None,
        attempts=1, last_error=error, next_attempt_at=now, state="waiting",
        claimed_by=None, claimed_at=None, updated_at=utcnow(), kind=kind, escalate_to=escalate_to,
    )  # fmt: skip
    column = RetryEntry.__table__.c
    # the stronger reader erred or failed the row: still an escalation to it, never a retry of the first
    still_escalation = (column.kind == "escalation") & (statement.excluded.kind == "retry")
    statement = statement.on_conflict_do_update(
        index_elements=["record_id", "schema_name", "schema_version"],
        set_={
            "attempts": column.attempts + 1, "last_error": statement.excluded.last_error,
            "schema_source": statement.excluded.schema_source, "schema_hash": statement.excluded.schema_hash,
            "schema_body": statement.excluded.schema_body, "claimed_by": None, "claimed_at": None,
            "updated_at": statement.excluded.updated_at,
            "kind": case((still_escalation, column.kind), else_=statement.excluded.kind),
            "escalate_to": case((still_escalation, column.escalate_to), else_=statement.excluded.escalate_to),
        },
    )  # fmt: skip
    entry = session.scalars(
        statement.returning(RetryEntry), execution_options={"populate_existing": True}
    ).one()
    entry.state = "dead" if entry.attempts >= max_attempts else "waiting"
    # a new escalation is no failed call to back off from: the stronger reader may take it at once; a
    # failure (the stronger reader's too: `kind` retry on an escalation) backs off
    wait = 0.0 if kind == "escalation" else backoff_seconds(entry.attempts)
    entry.next_attempt_at = now + timedelta(seconds=wait)
    session.flush()
    return entry


def record_success(session: Session, record_ids: Collection[int], schema: Schema) -> None:
    """Forget the entries of records that now have a result: one DELETE for a stored group, not one a
    record. Not committed: part of the chunk's transaction."""
    if not record_ids:
        return
    session.execute(
        delete(RetryEntry).where(
            RetryEntry.record_id.in_(record_ids),
            RetryEntry.schema_name == schema.name,
            RetryEntry.schema_version == schema.version,
        )
    )


def claim_due(
    session: Session, worker: str, limit: int, now: datetime | None = None, kind: str | None = None,
    run_id: int | None = None,
) -> list[Claim]:  # fmt: skip
    """Take up to `limit` due, waiting entries (of one `kind`, of the records run `run_id` answered, if
    given) for `worker`, oldest due first, and commit the claim. `run_id`: a run's `--escalate now` reads
    its own rows, not the oldest of every run before it.

    One statement picks and marks the rows, so no other worker can take them in between; see the module
    docstring for why each backend is safe.
    """
    if limit <= 0:
        return []
    now = _utc(now)
    answered = None if run_id is None else select(RunResult.record_id).where(RunResult.run_id == run_id)
    due = (
        select(RetryEntry.id)
        .where(
            RetryEntry.state == "waiting",
            RetryEntry.next_attempt_at <= now,
            *([RetryEntry.kind == kind] if kind else []),
            *([RetryEntry.record_id.in_(answered)] if answered is not None else []),
        )
        .order_by(RetryEntry.next_attempt_at, RetryEntry.id)
        .limit(limit)
    )
    if is_postgres(session):
        due = due.with_for_update(skip_locked=True)
    # MATERIALIZED: pick once. As a plain `IN (subquery)` PostgreSQL may re-run the subquery for every
    # candidate row; the rows this UPDATE already changed are then skipped by SKIP LOCKED and the next
    # ones picked, so `LIMIT 1` claimed the whole queue (seen with 3 and 50 rows, PostgreSQL 15).
    picked = due.cte("due").prefix_with("MATERIALIZED")
    statement = (
        update(RetryEntry)
        .where(RetryEntry.id.in_(select(picked.c.id)))
        .values(state="claimed", claimed_by=worker, claimed_at=now, updated_at=utcnow())
        .returning(
            RetryEntry.id, RetryEntry.record_id, RetryEntry.schema_name, RetryEntry.schema_version,
            RetryEntry.schema_source, RetryEntry.attempts, RetryEntry.schema_body, RetryEntry.kind,
            RetryEntry.escalate_to, RetryEntry.next_attempt_at,
        )
        .execution_options(synchronize_session="fetch")
    )  # fmt: skip
    rows = session.execute(statement).all()
    session.commit()
    rows.sort(key=lambda row: (_utc(row.next_attempt_at), row.id))  # RETURNING has no order of its own
    return [Claim(*row[:9]) for row in rows]


def unclaim(session: Session, worker: str, record_ids: list[int], schema_name: str, version: int) -> None:
    """Hand entries back untouched (their record is in flight elsewhere): waiting, due now; commit."""
    session.execute(
        update(RetryEntry)
        .where(RetryEntry.claimed_by == worker, RetryEntry.state == "claimed",
               RetryEntry.record_id.in_(record_ids), RetryEntry.schema_name == schema_name,
               RetryEntry.schema_version == version)
        .values(state="waiting", claimed_by=None, claimed_at=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )  # fmt: skip
    session.commit()


def give_back(session: Session, worker: str, entry_ids: Collection[int]) -> int:
    """Hand claimed entries back untouched, due as they were (the reader they need could not be opened:
    no try was made); commit; count them."""
    if not entry_ids:
        return 0
    statement = (
        update(RetryEntry)
        .where(RetryEntry.id.in_(entry_ids), RetryEntry.claimed_by == worker, RetryEntry.state == "claimed")
        .values(state="waiting", claimed_by=None, claimed_at=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    count = session.execute(statement).rowcount
    session.commit()
    return count


def settle_changed_texts(session: Session, claims: Collection[Claim]) -> set[int]:
    """Of claimed entries, settle those whose record's text changed since they were queued (a newer
    record of the same source and key exists): state `stale`, with why; commit; return their ids.

    Read again, the stronger reader would be paid for a text the source no longer has, and its answer
    would stand beside the new text's as a second current row of the key.
    """
    if not claims:
        return set()
    newer = Record.__table__.alias("newer")
    rows = session.execute(
        select(Record.id, func.max(newer.c.id))
        .join(newer, (newer.c.source == Record.source) & (newer.c.key == Record.key)
              & (newer.c.id > Record.id))
        .where(Record.id.in_({c.record_id for c in claims}))
        .group_by(Record.id)
    ).all()  # fmt: skip
    replaced = dict(rows)
    stale = {c.entry_id: replaced[c.record_id] for c in claims if c.record_id in replaced}
    for entry_id, newest in stale.items():
        reason = f"stale: the record's text changed since it was queued (its text now is record {newest})"
        session.execute(
            update(RetryEntry)
            .where(RetryEntry.id == entry_id)
            .values(state="stale", last_error=reason, claimed_by=None, claimed_at=None, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
    session.commit()
    return set(stale)


def release_stale(session: Session, older_than: timedelta, now: datetime | None = None) -> int:
    """Put claims older than `older_than` back to waiting (their worker died or hung); commit; count them.

    Their due time is already past, so they are claimable again at once.
    """
    cutoff = _utc(now) - older_than
    statement = (
        update(RetryEntry)
        .where(RetryEntry.state == "claimed", RetryEntry.claimed_at < cutoff)
        .values(state="waiting", claimed_by=None, claimed_at=None, updated_at=utcnow())
        .execution_options(synchronize_session="fetch")
    )
    count = session.execute(statement).rowcount
    session.commit()
    return count


def release_worker(session: Session, worker: str, last_seen: datetime) -> int:
    """Put back the claims `worker` held at `last_seen`, its last sign of life (its run was found dead);
    not committed; count them.

    A claim made later is a live worker's that reuses the name (host and pid): a worker refreshes its
    claims with its run's heartbeat, so a dead one's are never newer than that heartbeat.
    """
    statement = (
        update(RetryEntry)
        .where(RetryEntry.state == "claimed", RetryEntry.claimed_by == worker,
               RetryEntry.claimed_at <= _utc(last_seen))
        .values(state="waiting", claimed_by=None, claimed_at=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )  # fmt: skip
    return session.execute(statement).rowcount


def requeue(session: Session, entry_id: int, now: datetime | None = None) -> RetryEntry:
    """An operator's "try again now": due at once, attempts from zero, any claim cleared; commit.

    Works on dead and claimed entries too; a worker still busy with a claimed one may then finish it
    while another retries it, which is harmless because results are upserted per (record, schema).
    """
    now = _utc(now)
    statement = (
        update(RetryEntry)
        .where(RetryEntry.id == entry_id)
        .values(state="waiting", next_attempt_at=now, attempts=0, claimed_by=None, claimed_at=None,
                updated_at=utcnow())
        .returning(RetryEntry)
        .execution_options(populate_existing=True)
    )  # fmt: skip
    entry = session.scalars(statement).one_or_none()
    if entry is None:
        session.rollback()
        raise LookupError(f"no retry queue entry with id {entry_id}")
    session.commit()
    return entry


def _read(session: Session, statement: Any) -> list[Any]:
    """Run a read; end the transaction if this call began it (on SQLite it holds the write lock)."""
    began = not session.in_transaction()
    rows = list(session.execute(statement))
    if began:
        session.commit()
    return rows


def list_entries(session: Session, state: str | None = None, limit: int = 100) -> list[RetryEntry]:
    """Entries (of one state, or all), soonest due first: what an operator looks at."""
    statement = select(RetryEntry).order_by(RetryEntry.next_attempt_at, RetryEntry.id).limit(limit)
    if state is not None:
        statement = statement.where(RetryEntry.state == state)
    return [row[0] for row in _read(session, statement)]


def queue_counts(session: Session) -> dict[str, int]:
    """How many entries are in each state; the known states are always present, zero or not."""
    rows = _read(session, select(RetryEntry.state, func.count()).group_by(RetryEntry.state))
    return {state: 0 for state in STATES} | {state: count for state, count in rows}
