"""Open the database: SQLite by default, PostgreSQL by URL, migrated to head on first use.

SQLite needs care to be a safe queue: with the default driver settings a SELECT-then-UPDATE inside
`with conn.begin()` runs the SELECT outside the transaction, and two workers claim the same rows. So
the driver's own transaction handling is switched off and every transaction starts with
`BEGIN IMMEDIATE` (one writer at a time, readers never blocked thanks to WAL).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine.url import make_url
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).parent / "migrations"


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:  # type: ignore[no-untyped-def]
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


@cache
def get_engine(url: str) -> Engine:
    """One engine per URL per process, migrated to the newest schema before first use."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, pool_pre_ping=True)
    if parsed.get_backend_name() == "sqlite":
        _sqlite_pragmas(engine)
    with engine.begin() as connection:
        config = alembic_config(url)
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    return engine


def session_factory(url: str) -> sessionmaker:
    return sessionmaker(get_engine(url), expire_on_commit=False)


def is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def upsert_insert(session: Session, model: type) -> Any:
    """An INSERT that supports `on_conflict_do_update`, in the session's dialect (PostgreSQL or SQLite)."""
    return (postgresql if is_postgres(session) else sqlite).insert(model)
