"""A person's decisions on a row's unsure values: stored beside the model's reading, read back per row.

`formwork review --unsure` writes a page of the values a run was unsure of; a person accepts, fixes or
sets each to none, and `formwork settle FILE` stores the page's export here (db.models.Decision). The
model's reading is never overwritten: `results.data` and `trust` stay as the run stored them, and a
decision keeps the value the model read beside the person's. A row every value of which is certified
or confirmed becomes `ok` (flows.settle decides that; `mark_ok` stores it).

Decisions are not a random sample: a person saw only the rows the run was unsure of. They never feed
a calibration, which reads audits (db.audits) and gold sets only; nothing here is imported there.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from formwork.db.models import Decision, Record, Result, RetryEntry, Run, RunResult


@dataclass(frozen=True)
class NewDecision:
    """One answer from the page's export, checked against the run's reading (flows.settle)."""

    record_id: int
    schema_name: str
    schema_version: int
    run_id: int
    field: str
    action: str  # accept, fix, none
    value: Any
    model_value: Any
    model_state: str
    decided_at: datetime


def store_decisions(session: Session, decisions: list[NewDecision], who: str) -> None:
    """Add each decision as `who`'s (the caller commits)."""
    session.add_all(Decision(**vars(d), who=who) for d in decisions)
    session.flush()


def row_decisions(session: Session, record_ids: Collection[int], schema_name: str, version: int
                  ) -> dict[int, dict[str, dict[str, Any]]]:  # fmt: skip
    """Per record, each field's latest decision as flows.delivered reads it (`row["decisions"]`):
    value, model_value, action, who and when (ISO, UTC, to the second)."""
    found: dict[int, dict[str, dict[str, Any]]] = {}
    query = (
        select(Decision)
        .where(Decision.record_id.in_(list(record_ids)), Decision.schema_name == schema_name,
               Decision.schema_version == version)
        .order_by(Decision.id)
    )  # fmt: skip
    for d in session.scalars(query):
        when = d.decided_at if d.decided_at.tzinfo else d.decided_at.replace(tzinfo=UTC)  # SQLite drops it
        at = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        found.setdefault(d.record_id, {})[d.field] = {
            "value": d.value, "model_value": d.model_value, "action": d.action, "who": d.who, "at": at,
        }  # fmt: skip
    return found


def run_decisions(session: Session, run_id: int) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """`row_decisions` for every record of run `run_id`, keyed as db.queries.result_rows names a row:
    (source, record key)."""
    run = session.get(Run, run_id)
    if run is None:
        return {}
    query = (
        select(Record.id, Record.source, Record.key)
        .join(RunResult, RunResult.record_id == Record.id)
        .where(RunResult.run_id == run_id)
    )
    keys = {record_id: (source, key) for record_id, source, key in session.execute(query)}
    found = row_decisions(session, list(keys), run.schema_name, run.schema_version)
    return {keys[record_id]: fields for record_id, fields in found.items()}


def current_result(session: Session, record_id: int, schema_name: str, version: int, run: Run | None = None
                   ) -> Result | None:  # fmt: skip
    """The record's current answer for the schema version (what `ok` is decided on). Each reader (model
    and mode) keeps its own row (db.store): the one run `run` wrote, else the one of its reader, else
    the latest stored."""
    query = select(Result).where(Result.record_id == record_id, Result.schema_name == schema_name,
                                 Result.schema_version == version)  # fmt: skip
    order = [Result.updated_at.desc(), Result.id.desc()]
    if run is not None:
        order = [(Result.run_id == run.id).desc(), (Result.setup == (run.setup or "")).desc(), *order]
    return session.scalars(query.order_by(*order)).first()


def mark_ok(session: Session, result: Result) -> None:
    """A row a person settled: `ok`, nothing left to retry, and no queue entry of its reader left to read it
    again (a retry or an escalation would read over what the person settled); one a worker holds is left
    to it, and another reader's entry waits for that reader's row."""
    result.status = "ok"
    result.retryable = False
    session.execute(
        delete(RetryEntry).where(RetryEntry.record_id == result.record_id,
                                 RetryEntry.schema_name == result.schema_name,
                                 RetryEntry.schema_version == result.schema_version,
                                 RetryEntry.setup == result.setup, RetryEntry.state != "claimed")
    )  # fmt: skip
