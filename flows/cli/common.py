"""What every CLI command shares: the two consoles, the database option and friendly failure."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

out = Console(emoji=False)  # data: tables, JSONL, CSV; `:ticket:` in a name is text, never an emoji
err = Console(stderr=True, emoji=False)  # progress and errors, so stdout stays clean for the next program


# C0 and C1 controls (ESC starts a title, a clear screen, an OSC 52 clipboard write), and the invisible
# marks that reorder or hide what a terminal shows (bidi overrides and isolates, zero-width characters)
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` for a terminal: each control character written as its escape (ESC as `\\x1b`), so an id
    or value read from a record is shown, never obeyed. Exports (JSONL, CSV) keep the data as it is."""
    return _UNPRINTABLE.sub(lambda found: found[0].encode("unicode_escape").decode("ascii"), text)


class Status(StrEnum):
    ok = "ok"
    partial = "partial"
    failed = "failed"


DbOption = Annotated[
    str | None, typer.Option("--db", help="database URL (default: FORMWORK_DB_URL or sqlite)")
]


def resolve_db(url: str | None) -> str:
    """The database URL from --db or the settings, normalised like the setting (postgres:// works)."""
    from pydantic import ValidationError

    from formwork.tasks.settings import Settings

    try:
        return Settings(**({"db_url": url} if url else {})).db_url
    except ValidationError as exc:
        fail(f"settings are invalid: {exc}")


@contextmanager
def settings_in_environment(values: dict[str, str]) -> Iterator[None]:
    """Hand settings to a flow as FORMWORK_* variables, never as (stored) flow parameters."""
    names = {f"FORMWORK_{key.upper()}": value for key, value in values.items()}
    previous = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def database_in_environment(url: str) -> AbstractContextManager[None]:
    """Hand the database URL to a flow through the environment, never as a (stored) flow parameter."""
    return settings_in_environment({"db_url": url})


def fail(message: str, code: int = 2) -> NoReturn:
    """Print what went wrong and what to do, and exit `code`: 2 for a usage or input problem, 3 for
    records left without a result because another run holds them, 1 for a database that could not be
    opened or reached (with what became of the run's work, not a traceback), 4 for a run whose every
    record failed (nothing to use: a broken reader or input, never a success)."""
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)  # one line, however long
    raise typer.Exit(code)


def database_gone(exc: Exception) -> str:
    """What to say when the database could not be reached: at the start (the driver's error), or in
    the middle of a run (db.keeping says for how long and what became of the finished records)."""
    from formwork.db.keeping import DatabaseUnavailable, reason

    if isinstance(exc, DatabaseUnavailable):
        return str(exc)
    return f"the database could not be reached ({reason(exc)}): start it, or check --db / FORMWORK_DB_URL"


def open_database(db: str | None, existing: bool = False) -> str:
    """The database URL --db (or the settings) names, opened and migrated here, so that a mistyped,
    missing or unreachable database is one line and exit 1, never a traceback from inside a flow.

    `existing`: a command that only reads (results, queue, review...) refuses a SQLite file that is not
    there (opening it would create it, and then say "nothing", as if the mistyped path were right)."""
    from alembic.util import CommandError
    from sqlalchemy.engine.url import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from formwork.db.session import get_reader
    from formwork.tasks.redact import redact

    url = resolve_db(db)
    try:
        parsed = make_url(url)
        path = parsed.database if parsed.get_backend_name() == "sqlite" else None
        if existing and path not in (None, "", ":memory:") and not Path(path).is_file():
            fail(f"there is no database at {Path(path).resolve()} ({redact(url)}): correct --db or "
                 "FORMWORK_DB_URL, or make it with `formwork run`", code=1)  # fmt: skip
        get_reader(url)  # the writing engine first, migrated; on SQLite a reading one beside it
    except (SQLAlchemyError, CommandError, ImportError, OSError) as exc:  # a driver, dialect or migration
        fail(cannot_open(url, exc), code=1)
    return url


def cannot_open(url: str, exc: BaseException) -> str:
    """Why the database at `url` could not be opened or read (its URL redacted), and what to fix."""
    from alembic.util import CommandError
    from sqlalchemy.exc import ArgumentError, DatabaseError, NoSuchModuleError, OperationalError

    from formwork.db.keeping import reason
    from formwork.tasks.redact import redact

    if isinstance(exc, ArgumentError | NoSuchModuleError | ImportError):
        fix = "correct --db or FORMWORK_DB_URL: sqlite:///PATH or postgresql://USER@HOST/NAME"
    elif isinstance(exc, OperationalError):
        fix = "start the database, or correct --db or FORMWORK_DB_URL (host, name, user, password, path)"
    elif isinstance(exc, DatabaseError):
        fix = "it is not a Formwork database: correct --db or FORMWORK_DB_URL"
    elif isinstance(exc, CommandError):
        fix = "it was written by a newer Formwork: upgrade Formwork, or use another database"
    else:
        fix = "correct --db or FORMWORK_DB_URL"
    return redact(f"cannot open the database {url}: {reason(exc)}; {fix}")


@contextmanager
def opened(db: str | None, write: bool = False, existing: bool = True) -> Iterator[Session]:
    """A session on the database --db names, for a command: refused in one line when it cannot be
    opened (`open_database`), or when it goes away while the command works (exit 1 either way).
    Reads by default (never the write lock: a run may be writing); `write` for the commands that store."""
    from sqlalchemy.exc import OperationalError

    from formwork.db.session import reader_factory, session_factory

    url = open_database(db, existing)
    with (session_factory if write else reader_factory)(url)() as session:
        try:
            yield session
        except OperationalError as exc:
            fail(cannot_open(url, exc), code=1)


def chosen_run(session: Session, run: int | None, model: str | None = None) -> int:
    """The run --run names, or the latest run of the reader --model names, or the latest; a run the
    database does not hold, or a reader it never ran, is refused in one line, not shown empty."""
    from formwork.db.queries import latest_run_id, run_exists, setups

    if model is not None:
        if run is not None:
            fail("give --run or --model, not both: --run names one run, --model the latest run of a reader")
        found = latest_run_id(session, model.strip())
        if found is None:
            known = ", ".join(setups(session)) or "none recorded (runs from before readers were stored)"
            fail(f"no run in this database read with {model!r}; its readers: {known}")
        return found
    latest = latest_run_id(session)
    if latest is None:
        fail("no run in this database yet; start one with `formwork run`")
    if run is None:
        return latest
    if not run_exists(session, run):
        fail(f"there is no run {run} in this database (the latest is run {latest}): correct --run or --db")
    return run
