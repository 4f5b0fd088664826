"""What every CLI command shares: the two consoles, the database option and friendly failure."""

from __future__ import annotations

from typing import Annotated, NoReturn

import typer
from rich.console import Console

out = Console()  # data: tables, JSONL, CSV
err = Console(stderr=True)  # progress and errors, so stdout stays clean for the next program

DbOption = Annotated[
    str | None, typer.Option("--db", help="database URL (default: FORMWORK_DB_URL or sqlite)")
]


def resolve_db(url: str | None) -> str:
    from tasks.settings import Settings

    return url or Settings().db_url


def fail(message: str) -> NoReturn:
    """Print what went wrong and what to do, and exit 2 (a usage or input problem, not a crash)."""
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(2)
