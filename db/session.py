"""Open the database: SQLite by default, PostgreSQL by URL, migrated to head on first use.

SQLite needs care to be a safe queue: with the default driver settings a SELECT-then-UPDATE inside
`with conn.begin()` runs the SELECT outside the transaction, and two workers claim the same rows. So
the driver's own transaction handling is switched off and every WRITE transaction starts with
`BEGIN IMMEDIATE` (one writer at a time). Reads get their own engine whose transactions begin
DEFERRED: a read that took the write lock made another writer fail with "database is locked" (WAL
never blocks readers, so reads need no lock at all). Use `session_factory` to write and
`reader_factory` to read.

Workers starting together on a new PostgreSQL database would each run the migration; it is serialised
with a transaction-scoped advisory lock (SQLite's BEGIN IMMEDIATE serialises it already).
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


MIGRATION_LOCK = 0x466F726D  # "Form": the advisory lock key that serialises migrations on PostgreSQL


def _sqlite_pragmas(engine: Engine, begin: str) -> None:
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
        connection.exec_driver_sql(begin)


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def _open(url: str, begin: str) -> Engine:
    parsed = make_url(url)
    engine = create_engine(url, pool_pre_ping=True)
    if parsed.get_backend_name() == "sqlite":
        _sqlite_pragmas(engine, begin)
    return engine


@cache
def get_engine(url: str) -> Engine:
    """One writing engine per URL per process, migrated to the newest schema before first use."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = _open(url, "BEGIN IMMEDIATE")
    _migrate(engine, url)
    return engine


def _migrate(engine: Engine, url: str) -> None:
    """Upgrade to head in one transaction; on SQLite with foreign keys off, checked before the commit.

    SQLite's ALTER TABLE cannot change constraints, so a batch migration copies a table and drops the
    old one; with foreign keys on, dropping `records` while other tables point at it fails as soon as
    the database holds data. The pragma only takes effect outside a transaction, so it is set on the
    driver's connection before BEGIN, and `foreign_key_check` refuses a migration that broke a key.
    """
    sqlite_db = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        driver = connection.connection.driver_connection
        if sqlite_db:
            driver.execute("PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                if engine.dialect.name == "postgresql":
                    connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
                config = alembic_config(url)
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
                broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all() if sqlite_db else []
                if broken:
                    raise RuntimeError(f"the migration left rows with broken foreign keys: {broken[:5]}")
        finally:
            if sqlite_db:
                driver.execute("PRAGMA foreign_keys=ON")


@cache
def get_reader(url: str) -> Engine:
    """The reading engine: on SQLite its transactions begin DEFERRED and never take the write lock."""
    writer = get_engine(url)  # migrates first
    if writer.dialect.name != "sqlite":
        return writer
    return _open(url, "BEGIN")


def session_factory(url: str) -> sessionmaker:
    """Sessions that write (on SQLite each transaction holds the write lock from its start)."""
    return sessionmaker(get_engine(url), expire_on_commit=False)


def reader_factory(url: str) -> sessionmaker:
    """Sessions that only read: never blocked by a writer, never blocking one."""
    return sessionmaker(get_reader(url), expire_on_commit=False)


def is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def upsert_insert(session: Session, table: Any) -> Any:
    """An INSERT into `table` (a model or its Table) that supports `on_conflict_do_update`, in the
    session's dialect (PostgreSQL or SQLite)."""
    return (postgresql if is_postgres(session) else sqlite).insert(table)
