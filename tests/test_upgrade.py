"""Upgrading a database that holds data, from every earlier revision, on SQLite and PostgreSQL.

Issue 20 point 6: migration 0002's batch alter ran with SQLite's foreign keys on and failed with
`FOREIGN KEY constraint failed [DROP TABLE records]` as soon as a table held rows; migrated by hand,
runs from before the upgrade showed no results in `results --run N`, and a run the old version left
`running` (no heartbeat) was never marked crashed. Each old database here is built by the old
migrations themselves and filled through reflection (the columns that revision had), then opened the
way every command opens it (db.session.get_engine).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData, create_engine, func, inspect, select, text
from sqlalchemy.sql import sqltypes

from formwork.db.claims import mark_crashed
from formwork.db.models import Calibration, Record, Result, RunResult
from formwork.db.queries import result_rows
from formwork.db.session import alembic_config, get_engine, reader_factory, session_factory
from formwork.db.store import text_digest

LONG_AGO = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
TAXI, LUNCH = text_digest("Taxi 12 EUR"), text_digest("Lunch 9 EUR")  # written from 0002 on
ROWS = {  # what an old version wrote: two records, a run it left running, its results and calls
    "records": [{"id": 1, "source": "a.jsonl", "key": "1", "text": "Taxi 12 EUR", "text_hash": TAXI},
                {"id": 2, "source": "a.jsonl", "key": "2", "text": "Lunch 9 EUR", "text_hash": LUNCH}],
    "runs": [{"id": 1, "state": "running", "started_at": LONG_AGO}],
    "results": [{"id": 1, "record_id": 1, "run_id": 1, "status": "ok", "data": {"amount": 12}},
                {"id": 2, "record_id": 2, "run_id": 1, "status": "failed", "data": None}],
    "model_calls": [{"id": 1, "record_id": 1, "run_id": 1}],
    "retry_queue": [{"id": 1, "record_id": 2}],
    "run_results": [{"id": 1, "record_id": 1, "run_id": 1, "status": "ok", "data": {"amount": 12}}],
    "calibrations": [{"id": 1, "threshold": 0.9, "bound": 0.955}],  # from 0007 on
}  # fmt: skip


def _filler(column: Any) -> Any:
    """A value of the column's type for a NOT NULL column the row above does not name."""
    kind = column.type
    if isinstance(kind, sqltypes.DateTime):
        return LONG_AGO
    if isinstance(kind, sqltypes.JSON):
        return []
    if isinstance(kind, sqltypes.Boolean):
        return False
    if isinstance(kind, sqltypes.Integer | sqltypes.Float):
        return 1
    return "x"


CALIBRATED = "0007_calibrations"
BACKFILLED = "0006_run_results_backfill"  # from here on, a version wrote history for every result
LATER_HISTORY = {"id": 2, "record_id": 2, "run_id": 1, "status": "failed", "data": None}


def _fill(url: str, revision: str) -> None:
    engine = create_engine(url)
    written = {
        **ROWS,
        "run_results": ROWS["run_results"] + ([LATER_HISTORY] if revision >= BACKFILLED else []),
    }
    with engine.begin() as connection:
        tables = MetaData()
        tables.reflect(connection)
        for name, rows in written.items():
            if name not in tables.tables:
                continue
            table = tables.tables[name]
            for row in rows:
                full = {c.name: row.get(c.name, _filler(c)) for c in table.columns
                        if c.name in row or not (c.nullable or c.server_default is not None)}  # fmt: skip
                connection.execute(table.insert().values(full))
            if engine.dialect.name == "postgresql":  # explicit ids: move the sequence as the old version did
                sequence = f"pg_get_serial_sequence('{name}', 'id')"
                connection.execute(text(f"SELECT setval({sequence}, (SELECT max(id) FROM {name}))"))
    engine.dispose()


def _old_database(url: str, revision: str) -> None:
    engine = create_engine(url)
    with engine.begin() as connection:
        if engine.dialect.name == "sqlite":
            connection.exec_driver_sql("PRAGMA foreign_keys=ON")  # as every Formwork connection has it
        config = alembic_config(url)
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    engine.dispose()
    _fill(url, revision)


def _revisions() -> list[str]:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    head = script.get_current_head()
    return sorted(r.revision for r in script.walk_revisions() if r.revision != head)


@pytest.mark.parametrize("revision", _revisions())
def test_a_database_with_data_upgrades_from_every_revision(any_db_url: str, revision: str) -> None:
    _old_database(any_db_url, revision)
    engine = get_engine(any_db_url)  # what every command does first: migrate to head
    with engine.connect() as connection:
        assert connection.scalar(text("SELECT count(*) FROM records")) == 2
        if engine.dialect.name == "sqlite":
            assert connection.exec_driver_sql("PRAGMA foreign_key_check").all() == []
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1  # back on
    with reader_factory(any_db_url)() as session:
        assert [r.text_hash for r in session.scalars(select(Record).order_by(Record.id))] == [TAXI, LUNCH]
        rows = result_rows(session, run_id=1)
        assert [(r["record"], r["status"], r["data"]) for r in rows] == [
            ("1", "ok", {"amount": 12}), ("2", "failed", None)]  # fmt: skip
        assert session.scalar(select(func.count()).select_from(RunResult)) == 2  # one per result
        assert session.scalar(select(func.count()).select_from(Result)) == 2
    with session_factory(any_db_url)() as session:
        assert mark_crashed(session, timedelta(seconds=60)) == 1  # left running, no heartbeat
        assert mark_crashed(session, timedelta(seconds=60)) == 0
    assert "run_results" in inspect(engine).get_table_names()
    if revision >= CALIBRATED:  # a calibration made before 0008 certified rows only: no claim on values
        with reader_factory(any_db_url)() as session:
            (old,) = session.scalars(select(Calibration)).all()
            assert (old.threshold, old.bound, old.values_bound, old.values_kept) == (0.9, 0.955, None, None)
        # it certified rows, not values per field, and names no sampling or pipeline (0010): it matches no
        # run, which says so
        from formwork.db.calibrations import policy_for
        from formwork.tasks.evaluation.key import CalibrationKey

        key = CalibrationKey("x", 1, "x", "x", None, "x", "x", True, "x", "s", "p")
        with session_factory(any_db_url)() as session:
            applied = policy_for(session, key).applied
        assert (
            applied["calibration"] is None
            and "calibration 1 certifies rows, not values" in applied["guarantee"]
        )
