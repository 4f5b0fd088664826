"""Watermarks of SQL sources: read where the last finished run stopped, write after a run finishes.

The value is stored with its type, because it is bound back into the source's own query: a timestamp
must come back as a timestamp (text compares differently from a date on SQLite), a Decimal as a
Decimal. A watermark only moves forward, and only after the run that read the rows has finished: a
run that dies leaves it where it was, and a finished run never moves it past a stored record that
still has no result (db.claims.unprocessed), so no row is left behind by a run that died.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.claims import unprocessed
from formwork.db.models import Record, Watermark, utcnow
from formwork.db.session import reader_factory, upsert_insert
from formwork.schemas.registry import Schema
from formwork.tasks.sources.sql import SqlRows, SqlSelection, url_label

_DECODE = {
    "int": int, "float": float, "str": str, "decimal": Decimal,
    "datetime": datetime.fromisoformat, "date": date.fromisoformat,
}  # fmt: skip


def encode(value: Any) -> dict[str, Any]:
    """A JSON form of a watermark value that `decode` turns back into the same Python type."""
    for kind, types in (("datetime", datetime), ("date", date), ("decimal", Decimal), ("int", int),
                        ("float", float)):  # fmt: skip
        if isinstance(value, types) and not isinstance(value, bool):
            return {"type": kind, "value": value.isoformat() if kind in ("datetime", "date") else
                    (str(value) if kind == "decimal" else value)}  # fmt: skip
    return {"type": "str", "value": str(value)}


def decode(stored: dict[str, Any]) -> Any:
    return _DECODE[stored["type"]](stored["value"])


def read_watermark(session: Session, source: str, selection: str, schema: Schema) -> Any:
    """The value to read from, or None when this source was never read for this schema version."""
    stored = session.scalar(
        select(Watermark.value).where(
            Watermark.source == source, Watermark.selection == selection,
            Watermark.schema_name == schema.name, Watermark.schema_version == schema.version,
        )
    )  # fmt: skip
    return None if stored is None else decode(stored)


def save_watermark(
    session: Session, source: str, selection: str, schema: Schema, value: Any, run_id: int
) -> None:
    """Move the watermark to `value` (never back: an earlier value from a limited run is ignored)."""
    if value is None:
        return
    current = read_watermark(session, source, selection, schema)
    try:
        if current is not None and value <= current:
            return
    except TypeError:  # the column's type changed (naive vs aware, int vs text): take the new value
        pass
    row = {"source": source, "selection": selection, "schema_name": schema.name,
           "schema_version": schema.version, "value": encode(value), "run_id": run_id}  # fmt: skip
    statement = upsert_insert(session, Watermark).values(row)
    statement = statement.on_conflict_do_update(
        index_elements=["source", "selection", "schema_name", "schema_version"],
        set_={"value": statement.excluded.value, "run_id": run_id, "updated_at": utcnow()},
    )
    session.execute(statement)
    session.commit()


def reread_from(value: Any, window: timedelta) -> Any:
    """`value` moved back by the safety window, in the value's own type and shape.

    A PostgreSQL `DEFAULT now()` is the writing transaction's start, so a row can commit after a run
    read past its timestamp; re-reading a window behind the watermark finds it, at no model cost
    (records are idempotent). SQLite's text timestamps come back in the writer's shape: the earlier
    bound keeps its separator and drops what follows the seconds, which only widens an inclusive read.
    Values that are no time (ids, counters) are returned as they are.
    """
    if not window or value is None:
        return value
    if isinstance(value, datetime):
        return value - window
    if isinstance(value, date):
        return (datetime.combine(value, datetime.min.time()) - window).date()
    if isinstance(value, str) and len(value) >= 19:
        try:
            moved = datetime.fromisoformat(value) - window
        except ValueError:
            return value
        return moved.replace(tzinfo=None).isoformat(sep=value[10], timespec="seconds")
    return value


def rows_since_watermark(
    db_url: str, source: str, selection: SqlSelection, schema: Schema, window: timedelta = timedelta(0)
) -> SqlRows:
    """The rows to read: from the watermark less the safety window on, or the whole selection.

    Without an updated column there is no watermark: ids need not increase (UUIDs, text keys) and a
    row edited in place keeps its id, so the whole selection is read every run (unchanged rows cost
    no model call). Give `--updated-column` to read only new and changed rows.
    """
    if not selection.updated_column:
        return SqlRows(source, selection)
    label = url_label(source)
    with reader_factory(db_url)() as session:
        since = read_watermark(session, label, selection.watermark_label(), schema)
    return SqlRows(source, selection, reread_from(since, window))


def advance_watermark(session: Session, rows: SqlRows, schema: Schema, run_id: int) -> None:
    """After a finished run: the next run starts from the last row this one read, or from the first
    stored record of the source still without a result (claimed by a run that died, or by one still
    working), so the watermark never passes a record that was not processed."""
    column, high = rows.selection.updated_column, rows.high
    if not column or high is None:
        return
    kind = encode(high)["type"]
    waiting = select(Record.meta).where(Record.id.in_(unprocessed(rows.record_source, schema)))
    for meta in session.scalars(waiting):
        value = meta.get(column) if isinstance(meta, dict) else None
        if value is not None:
            try:
                high = min(high, decode({"type": kind, "value": value}))
            except (TypeError, ValueError, ArithmeticError):
                continue  # a value of another type (the column changed): no place in this order
    save_watermark(session, rows.label, rows.selection.watermark_label(), schema, high, run_id)
