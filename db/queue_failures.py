"""A chunk's failed records enter the retry queue and its stored ones leave it, in the chunk's transaction.

- `record_failure` / `record_success` never commit, so a result and its queue entry are written (or
  rolled back) together; the claiming side (db.queue_claims) commits at once, so it is a job apart.
- An escalation stays one until it is settled: a stronger reader that errs or fails the row counts a try
  and backs off, and the entry still names that reader (a plain retry would pay the first one again).
- An entry belongs to one reader (`setup`, NAME@MODE: runs.setup), as results do (db.store): only that
  reader's success settles it, and another reader's failure on the record is an entry of its own.
- Times are timezone-aware UTC; `now` is the queue's clock (injectable for tests), `updated_at` is
  always the wall clock. SQLite stores DateTime(timezone=True) without an offset and reads it
  back naive, so every time is converted to UTC (`as_utc`, used by every queue module) before it is
  written or compared: stored wall clocks are then UTC on both backends and compare correctly in SQL.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from datetime import UTC, datetime, timedelta

from sqlalchemy import case, delete
from sqlalchemy.orm import Session

from formwork.db.models import RetryEntry, utcnow
from formwork.db.session import upsert_insert
from formwork.schemas.registry import Schema


def as_utc(moment: datetime | None) -> datetime:
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
    setup: str = "",
) -> RetryEntry:
    """Count one more failed try of (record, schema version) by the reader `setup` (NAME@MODE, the row's);
    dead-letter it at `max_attempts`. `kind` escalation: the row waits for the stronger reader
    `escalate_to`, not for the same one again.

    One upsert increments the counter in SQL, so two failures recorded at once cannot both read the
    old count; the new count then decides the state and the backoff. Flushed, not committed: it belongs
    to the caller's chunk transaction.
    """
    now = as_utc(now)
    statement = upsert_insert(session, RetryEntry).values(
        record_id=record_id, schema_name=schema.name, schema_version=schema.version, setup=setup,
        schema_source=schema.source, schema_hash=schema.digest, schema_body=schema.body or None,
        attempts=1, last_error=error, next_attempt_at=now, state="waiting",
        claimed_by=None, claimed_at=None, updated_at=utcnow(), kind=kind, escalate_to=escalate_to,
    )  # fmt: skip
    column = RetryEntry.__table__.c
    # the stronger reader erred or failed the row: still an escalation to it, never a retry of the first
    still_escalation = (column.kind == "escalation") & (statement.excluded.kind == "retry")
    statement = statement.on_conflict_do_update(
        index_elements=["record_id", "schema_name", "schema_version", "setup"],
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


def record_success(session: Session, record_ids: Collection[int], schema: Schema,
                   setups: Mapping[int, str] | None = None) -> None:  # fmt: skip
    """Forget the entries of records that now have a result, each only the entry of the reader whose row
    it is (`setups`: record -> NAME@MODE; None: the unnamed reader "", record_failure's default): another
    reader's entry still waits for that reader. One DELETE a reader for a stored group, not one a record.
    Not committed: part of the chunk's transaction."""
    by_setup: dict[str, list[int]] = {}
    for record_id in record_ids:
        by_setup.setdefault((setups or {}).get(record_id, ""), []).append(record_id)
    for setup, records in by_setup.items():
        session.execute(
            delete(RetryEntry).where(
                RetryEntry.record_id.in_(records),
                RetryEntry.schema_name == schema.name,
                RetryEntry.schema_version == schema.version,
                RetryEntry.setup == setup,
            )
        )
