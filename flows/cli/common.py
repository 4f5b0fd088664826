"""What every CLI command shares: the two consoles, the database option and friendly failure."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from enum import StrEnum
from typing import Annotated, NoReturn

import typer
from rich.console import Console

out = Console()  # data: tables, JSONL, CSV
err = Console(stderr=True)  # progress and errors, so stdout stays clean for the next program


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
    reached (with what became of the run's work, not a traceback)."""
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


def database_gone(exc: Exception) -> str:
    """What to say when the database could not be reached: at the start (the driver's error), or in
    the middle of a run (db.keeping says for how long and what became of the finished records)."""
    from formwork.db.keeping import DatabaseUnavailable, reason

    if isinstance(exc, DatabaseUnavailable):
        return str(exc)
    return f"the database could not be reached ({reason(exc)}): start it, or check --db / FORMWORK_DB_URL"
