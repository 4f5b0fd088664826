"""Read input records from a SQL database (a table or a query), page by page, from a watermark on.

Why keyset pages and not OFFSET: a page is `WHERE (updated, id) > (last seen) ORDER BY updated, id
LIMIT n`, so every page costs the same however deep the table, and each page is its own short read
(no transaction held open on the user's database for a whole night). The source is only read, never
migrated or written.

The watermark is the highest value of the updated column (or of the id column without one) a finished
run has read; the next run starts there. With an updated column the boundary is inclusive (`>=`): a
row written later with the same timestamp is not missed, and re-reading the boundary rows costs
nothing because records are idempotent per (source, key, text hash). Rows whose updated column is NULL
have no place in that order, so they are read on every run (again at no model cost when unchanged).
SQLite keeps timestamps as text in whatever shape the writer chose (`10:00:00` or
`10:00:00.000000`), so its date and time columns are read and compared as that text: a bound
parameter rendered in another shape would turn the inclusive boundary into an exclusive one.

A URL password never leaves this module: labels are redacted, and a flow given the redacted URL finds
the real one in FORMWORK_SOURCE_URL, which the CLI sets (flow parameters are stored by Prefect).
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Date,
    DateTime,
    MetaData,
    String,
    Table,
    Time,
    column,
    create_engine,
    select,
    text,
    tuple_,
)
from sqlalchemy.engine.url import make_url
from sqlalchemy.exc import NoSuchTableError, SQLAlchemyError
from sqlalchemy.sql import ColumnElement, Selectable

from formwork.tasks.prompts import MAX_SOURCE_CHARS, long_text_warning
from formwork.tasks.redact import MASK, redact
from formwork.tasks.sources import InputRecord, SourceProblem

SCHEMES = {"postgresql", "postgres", "sqlite"}
SOURCE_URL_ENV = "FORMWORK_SOURCE_URL"


def is_database_url(source: str) -> bool:
    """True for `postgresql://…`, `postgres://…`, `sqlite:///…` (with or without a `+driver`)."""
    scheme, sep, _ = source.partition("://")
    return bool(sep) and scheme.split("+")[0].lower() in SCHEMES


def real_source_url(source: str) -> str:
    """The URL with its password: a redacted one is swapped for FORMWORK_SOURCE_URL when they match."""
    given = os.environ.get(SOURCE_URL_ENV)
    if MASK in source and given and redact(given) == source:
        return given
    return source


def driver_url(url: str) -> str:
    """psycopg 3 for PostgreSQL (as the settings choose it for Formwork's own database)."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def url_label(url: str) -> str:
    """The URL as stored with records and watermarks: no password, a SQLite path made absolute."""
    parsed = make_url(driver_url(url))
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        parsed = parsed.set(database=str(Path(parsed.database).resolve()))
    if parsed.password is not None:
        parsed = parsed.set(password=MASK)
    return redact(parsed.render_as_string(hide_password=False))  # and a `?password=` in the query


@dataclass(frozen=True)
class SqlSelection:
    """What to read from the database and which columns mean what."""

    query: str | None = None
    table: str | None = None
    id_column: str = "id"
    text_column: str = "text"
    updated_column: str | None = None

    def __post_init__(self) -> None:
        if (self.query is None) == (self.table is None):
            raise SourceProblem("a database source needs exactly one of --query or --table")

    def label(self) -> str:
        """Short and stable: the table name, or a hash of the query (a query can be long)."""
        if self.table:
            return f"table={self.table}"
        return f"query={hashlib.sha256(self.query.encode()).hexdigest()[:16]}"  # type: ignore[union-attr]

    def watermark_label(self) -> str:
        return f"{self.label()};{self.updated_column or self.id_column}"


def json_safe(value: Any) -> Any:
    """A column value as JSON can hold it: dates as ISO text, decimals as exact text, bytes as base64."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return str(value)  # Decimal, UUID, network types: their exact text


def _text_of(value: Any, where: str, meta: dict[str, Any]) -> tuple[str, str | None]:
    """The record text and, if the model cannot use it, why (a NULL or empty text fails alone)."""
    if value is None:
        return "", f"{where}: the text column is NULL"
    raw = bytes(value).decode("utf-8", errors="replace") if isinstance(value, bytes | memoryview) else value
    text_value = raw if isinstance(raw, str) else str(raw)
    if "\x00" in text_value:
        text_value = text_value.replace("\x00", "")
        meta.setdefault("warnings", []).append("NUL bytes were removed")
    if not text_value.strip():
        return text_value, f"{where}: the text is empty"
    if len(text_value) > MAX_SOURCE_CHARS:
        meta.setdefault("warnings", []).append(long_text_warning(len(text_value)))
    return text_value, None


class SqlRows(Iterator[InputRecord]):
    """The records of a selection, page by page; `high` is the watermark value of the last row read."""

    def __init__(self, url: str, selection: SqlSelection, since: Any = None, page_size: int = 1000) -> None:
        self.selection, self.since, self.page_size = selection, since, page_size
        self.high: Any = since
        self.label = url_label(url)
        target = driver_url(real_source_url(url))
        args = {"connect_timeout": 10} if make_url(target).get_backend_name() == "postgresql" else {}
        self._engine = create_engine(target, connect_args=args)
        try:
            self._source = self._selectable()  # refuse a bad source now, before the flow writes anything
        except SQLAlchemyError as exc:
            self._engine.dispose()
            said = redact(str(getattr(exc, "orig", None) or exc).strip().splitlines()[0])
            raise SourceProblem(f"{self.label}: {said}") from None
        self._rows = self._read()

    @property
    def record_source(self) -> str:
        """The `records.source` of this selection's records: the password-free URL and the selection."""
        return f"{self.label}#{self.selection.label()}"

    def __next__(self) -> InputRecord:
        return next(self._rows)

    def _selectable(self) -> Selectable:
        s = self.selection
        with self._engine.connect() as connection:
            if s.table:
                schema, _, name = s.table.rpartition(".")
                try:
                    source: Selectable = Table(
                        name, MetaData(), schema=schema or None, autoload_with=connection
                    )
                except NoSuchTableError:
                    raise SourceProblem(f"{self.label}: no table {s.table!r}") from None
                if connection.dialect.name == "sqlite":
                    for col in source.c:  # type: ignore[attr-defined]
                        if isinstance(col.type, Date | DateTime | Time):
                            col.type = String()  # SQLite keeps them as text: compare that text as is
            else:
                # sent as written: a `:word` inside a string literal is no bind parameter
                query = s.query.strip().rstrip(";").replace(":", "\\:")  # type: ignore[union-attr]
                names = list(connection.execute(text(f"SELECT * FROM ({query}) AS src LIMIT 0")).keys())
                source = text(query).columns(*(column(name) for name in names)).subquery("src")
        found = list(source.c.keys())
        wanted = [c for c in (s.id_column, s.text_column, s.updated_column) if c]
        missing = [c for c in wanted if c not in found]
        if missing:
            raise SourceProblem(f"{self.label} {s.label()}: no column {missing} (found: {found})")
        return source

    def _page_through(self, where: Sequence[ColumnElement[bool]], keys: list[Column]) -> Iterator[dict]:
        last: tuple | None = None
        while True:
            statement = select(self._source).where(*where).order_by(*keys).limit(self.page_size)
            if last is not None:
                statement = statement.where(tuple_(*keys) > tuple_(*last))
            with self._engine.connect() as connection:
                page = [dict(row) for row in connection.execute(statement).mappings()]
            yield from page
            if len(page) < self.page_size:
                return
            last = tuple(page[-1][key.name] for key in keys)

    def _read(self) -> Iterator[InputRecord]:
        s, c = self.selection, self._source.c
        try:
            if s.updated_column:
                for row in self._page_through([c[s.updated_column].is_(None)], [c[s.id_column]]):
                    yield self._record(row)
                keys = [c[s.updated_column], c[s.id_column]]
                where = [keys[0] >= self.since] if self.since is not None else [keys[0].is_not(None)]
            else:
                keys = [c[s.id_column]]
                where = [keys[0] > self.since] if self.since is not None else []
            for row in self._page_through(where, keys):
                self.high = row[keys[0].name]
                yield self._record(row)
        finally:
            self._engine.dispose()

    def _record(self, row: dict[str, Any]) -> InputRecord:
        s = self.selection
        key = str(row[s.id_column])
        meta = {name: json_safe(v) for name, v in row.items() if name not in (s.id_column, s.text_column)}
        body, problem = _text_of(row[s.text_column], f"row {s.id_column}={key}", meta)
        return InputRecord(key, body, meta, problem)


def read_sql(
    url: str,
    *,
    query: str | None = None,
    table: str | None = None,
    id_column: str = "id",
    text_column: str = "text",
    updated_column: str | None = None,
    since: Any = None,
    page_size: int = 1000,
) -> SqlRows:
    """Every row of the table or query (from `since` on) as an InputRecord; refuses a bad source at once."""
    selection = SqlSelection(query, table, id_column, text_column, updated_column)
    return SqlRows(url, selection, since, page_size)


def sql_selection(
    source: str,
    query: str | None = None,
    table: str | None = None,
    id_column: str = "id",
    text_column: str = "text",
    updated_column: str | None = None,
) -> SqlSelection | None:
    """The selection for a database source, None for a file source; a mix of the two is refused."""
    if is_database_url(source):
        return SqlSelection(query, table, id_column, text_column, updated_column)
    if query or table or updated_column:
        raise SourceProblem("--query, --table and --updated-column need a database URL as the input")
    return None


@contextmanager
def source_in_environment(source: str) -> Iterator[str]:
    """The source to pass as a flow parameter: a URL's password moves to FORMWORK_SOURCE_URL, so
    Prefect stores only the redacted URL and the flow finds the real one (`real_source_url`)."""
    if redact(source) == source:
        yield source
        return
    previous = os.environ.get(SOURCE_URL_ENV)
    os.environ[SOURCE_URL_ENV] = source
    try:
        yield redact(source)
    finally:
        if previous is None:
            os.environ.pop(SOURCE_URL_ENV, None)
        else:
            os.environ[SOURCE_URL_ENV] = previous
