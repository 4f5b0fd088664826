"""Workers claim due retry-queue entries, hand them back, and settle those whose text changed.

- `claim_due` commits at once: a claim must be visible to other workers before the slow model call, and
  the model must never be called inside an open transaction. A worker that dies leaves its claims
  behind; `release_stale` (after a timeout) and `release_worker` (its run found dead) put them back.
- Claiming is one statement on both backends, so two workers never take the same entry. PostgreSQL:
  `WITH due AS MATERIALIZED (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED) UPDATE ... WHERE id IN (SELECT
  id FROM due) RETURNING`. SQLite: the same without the lock clause, under the `BEGIN IMMEDIATE` that
  db.session issues (one writer at a time). A SELECT followed by a separate UPDATE is the trap: on
  SQLite with default driver settings it handed the same rows to two workers.
- An entry whose record's text changed since it was queued is settled `stale` (with why), never read:
  its source no longer holds that text, and the new text is a record of its own.

Apart from db.queue_failures because these commit on their own, outside any chunk's transaction.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from formwork.db.models import Record, RetryEntry, RunResult, utcnow
from formwork.db.queue_failures import as_utc
from formwork.db.session import is_postgres


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
    setup: str = ""  # the reader (NAME@MODE) whose run queued it, who reads a retry again; "": unnamed


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
    now = as_utc(now)
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
            RetryEntry.escalate_to, RetryEntry.setup, RetryEntry.next_attempt_at,
        )
        .execution_options(synchronize_session="fetch")
    )  # fmt: skip
    rows = session.execute(statement).all()
    session.commit()
    rows.sort(key=lambda row: (as_utc(row.next_attempt_at), row.id))  # RETURNING has no order of its own
    return [Claim(*row[:10]) for row in rows]


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
    cutoff = as_utc(now) - older_than
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
               RetryEntry.claimed_at <= as_utc(last_seen))
        .values(state="waiting", claimed_by=None, claimed_at=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )  # fmt: skip
    return session.execute(statement).rowcount
