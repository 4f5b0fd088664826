"""The retry queue: failed records wait with exponential backoff, workers claim them, the dead stay put.

Three jobs, three modules: a chunk's failures enter and its stored records leave inside its own
transaction (db.queue_failures, also the queue's UTC clock); workers claim, hand back and settle
entries, each committed at once (db.queue_claims); and here, what an operator sees and does (`formwork
queue`): the entries, their counts by state, and "try again now". The names callers import from
db.queue keep working from here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from formwork.db.models import RetryEntry, utcnow
from formwork.db.queue_claims import (
    Claim,
    claim_due,
    give_back,
    release_stale,
    release_worker,
    settle_changed_texts,
)
from formwork.db.queue_failures import as_utc, record_failure, record_success

# The claiming and failure names: still imported from here by flows/reprocess_failed.py, flows/runner.py,
# db/store.py and db/claims.py.
__all__ = [
    "STATES", "Claim", "claim_due", "give_back", "list_entries", "queue_counts", "record_failure",
    "record_success", "release_stale", "release_worker", "requeue", "settle_changed_texts",
]  # fmt: skip

STATES = ("waiting", "claimed", "dead")  # and `stale`, shown where there is one


def requeue(session: Session, entry_id: int, now: datetime | None = None) -> RetryEntry:
    """An operator's "try again now": due at once, attempts from zero, any claim cleared; commit.

    Works on dead and claimed entries too; a worker still busy with a claimed one may then finish it
    while another retries it, which is harmless because results are upserted per (record, schema
    version, reader).
    """
    now = as_utc(now)
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
