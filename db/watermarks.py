"""Watermarks of SQL sources: read where the last finished run stopped, write after a run finishes.

The value is stored with its type, because it is bound back into the source's own query: a timestamp
must come back as a timestamp (text compares differently from a date on SQLite), a Decimal as a
Decimal. A watermark only moves forward, and only after the run that read the rows has finished: a
run that dies leaves it where it was, so its stored-but-unextracted rows are read again next time.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.models import Watermark, utcnow
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


def rows_since_watermark(db_url: str, source: str, selection: SqlSelection, schema: Schema) -> SqlRows:
    """The source's rows from its watermark on (all rows on its first run for this schema version)."""
    label = url_label(source)
    with reader_factory(db_url)() as session:
        since = read_watermark(session, label, selection.watermark_label(), schema)
    return SqlRows(source, selection, since)


def advance_watermark(session: Session, rows: SqlRows, schema: Schema, run_id: int) -> None:
    """After a finished run: the next run starts from the last row this one read."""
    save_watermark(session, rows.label, rows.selection.watermark_label(), schema, rows.high, run_id)
