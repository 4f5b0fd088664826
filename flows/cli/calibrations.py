"""`formwork calibrations` and `formwork calibrations remove ID --yes`: which calibration applies to which
setup, and taking away one of your own.

A calibration decides which values a run certifies, so a user must see them all: each one stored in the
database (from `formwork eval --calibrate` or `formwork audit calibrate`) and each one that ships with
Formwork, with its key (schema, model, mode, engine), where and when it was made, what it certifies per
field, and whether a run with the current settings applies it, or why not. An audit of a few records
once stored a calibration that certified no field, and the next run dropped every value; `audit
calibrate` now refuses such a one without --replace, and `remove` takes a stored one away (a shipped one
is part of the package: a calibration of your own for the same setup overrides it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from formwork.flows.cli.common import DbOption, err, fail, opened, out

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from formwork.db.models import Calibration
    from formwork.schemas.registry import Schema
    from formwork.tasks.evaluation.key import CalibrationKey
    from formwork.tasks.settings import Settings

calibrations = typer.Typer(
    help="List the calibrations (stored and shipped) and which applies to runs with the current settings; "
    "`formwork calibrations remove ID --yes` removes a stored one.",
    invoke_without_command=True,
    no_args_is_help=False,
)
# a key's parts in words, for why a calibration is not the current settings' one
PARTS = {"schema_version": "schema version", "schema_hash": "schema body", "model": "model",
         "model_hash": "model file", "engine": "engine", "mode": "mode", "grounded": "grounded decoding",
         "reasoning_model": "reasoning model", "sampling": "sampling or budgets",
         "pipeline": "pipeline (made by another build)"}  # fmt: skip


def certifies(row: Calibration) -> str:
    """Each field certified at its target and threshold, then those it does not certify."""
    from formwork.db.calibration_changes import claims_of

    claims = claims_of(row).values()
    kept = [f"{c.field} {c.target:.0%} from {c.threshold:g}" for c in claims if c.certified]
    left = [c.field for c in claims if not c.certified]
    said = "; ".join(kept) if kept else "no field"
    return (
        said + (f"; not: {', '.join(left)}" if left else "") if claims else "nothing (made before per-value)"
    )


def _current(settings: Settings, name: str, schemas: dict[str, Schema | str]) -> CalibrationKey | str:
    """The key of a run of schema `name` with `settings`, or why it cannot be known without a run."""
    from formwork.schemas.registry import SchemaProblem, load_schema
    from formwork.tasks.engines.models import ModelUnavailable
    from formwork.tasks.evaluation.key import local_key

    if settings.engine != "local":
        return f"unknown: a served model ({settings.engine}) is known once it answers a run"
    if name not in schemas:
        try:
            schemas[name] = load_schema(name)
        except SchemaProblem:
            schemas[name] = f"unknown: {name} is not a built-in schema (pass --schema FILE to check it)"
    schema = schemas[name]
    if isinstance(schema, str):
        return schema
    try:
        return local_key(settings, schema)
    except (ModelUnavailable, FileNotFoundError, OSError) as exc:
        return f"unknown: {exc}"


def _short(part: str, value: object) -> str:
    """A key's part as a listing shows it: a hash by its first 12 characters."""
    return str(value)[:12] if part.endswith("_hash") else str(value)


def _applies(session: Session | None, row: Calibration, label: int | str, now: CalibrationKey | str) -> str:
    """Whether a run with the current settings applies this calibration, or why not."""
    from formwork.db.calibrations import applying

    if row.escalated_from:  # never to a run of its reader's own: only to what that first reader escalates
        return f"only to escalations from {row.escalated_from}"
    if isinstance(now, str):
        return now
    differ = [f"{PARTS[part]} {_short(part, getattr(row, part))} in it, {_short(part, getattr(now, part))} "
              "here" for part in PARTS if getattr(row, part) != getattr(now, part)
              and not (part in ("model_hash", "reasoning_model") and row.model != now.model)]  # fmt: skip
    if differ:
        return "no: " + "; ".join(differ)
    chosen = applying(session, now)
    if chosen is not None and chosen[1] != label:
        return f"no: calibration {chosen[1]} applies instead (newer, or your own over a shipped one)"
    return "yes"


@calibrations.callback()
def list_calibrations(
    context: typer.Context,
    schema: Annotated[
        str | None, typer.Option("--schema", "-s", help="a schema file or name to check (default: built-ins)")
    ] = None,
    db: DbOption = None,
) -> None:
    """Without a subcommand: every stored and shipped calibration, and whether current settings apply it."""
    if context.invoked_subcommand is not None:
        return
    from formwork.schemas.registry import SchemaProblem, load_schema
    from formwork.tasks.settings import Settings

    schemas: dict[str, Schema | str] = {}
    if schema is not None:
        try:
            chosen = load_schema(schema)
        except SchemaProblem as exc:
            fail(str(exc))
        schemas[chosen.name] = chosen
    settings = Settings()
    table = Table(title=f"calibrations (applies: to a run with the current settings, mode {settings.mode})")
    for column in ("id", "schema", "model", "mode", "engine", "from", "made", "certifies", "applies"):
        table.add_column(column, overflow="fold")
    refused: dict[str, None] = {}  # each damaged shipped file said once, after the table
    if (missing := _missing(db)) is not None:  # no run yet: what ships still applies to the first one
        _add_rows(table, None, settings, schemas, refused)
    else:
        with opened(db) as session:
            _add_rows(table, session, settings, schemas, refused)
    out.print(table)
    for line in refused:
        err.print(escape(line), soft_wrap=True)
    if missing is not None:
        err.print(f"no database at {missing} yet: only the calibrations that ship are listed", soft_wrap=True)
    if not table.row_count:
        out.print("no calibration: runs keep a value unchecked only where every reading is sure of it")


def _missing(db: str | None) -> str | None:
    """The SQLite file --db (or the settings) names, where it does not exist yet; else None."""
    from pathlib import Path

    from sqlalchemy.engine.url import make_url
    from sqlalchemy.exc import ArgumentError

    from formwork.flows.cli.common import resolve_db

    try:
        url = make_url(resolve_db(db))
    except ArgumentError:
        return None  # opened() says what is wrong with it
    path = url.database if url.get_backend_name() == "sqlite" else None
    return (
        str(Path(path).resolve()) if path not in (None, "", ":memory:") and not Path(path).is_file() else None
    )


def _add_rows(table: Table, session: Session | None, settings: Settings, schemas: dict[str, Schema | str],
              refused: dict[str, None]) -> None:  # fmt: skip
    """One row per stored calibration (oldest first), then per shipped one."""
    from formwork.db.calibration_changes import source_of
    from formwork.db.calibration_store import stored_calibrations
    from formwork.db.calibrations import shipped_row
    from formwork.tasks.evaluation.shipped import shipped_files

    found: list[tuple[Calibration, int | str]] = []
    if session is not None:
        found += [(row, row.id) for row in stored_calibrations(session)]
    found += [(shipped_row(data), f"shipped in {data['file']}")
              for data in shipped_files(say=lambda line: refused.setdefault(line))]  # fmt: skip
    for row, label in found:
        now = _current(settings, row.schema_name, schemas)
        table.add_row(str(label).removeprefix("shipped in "), f"{row.schema_name}@v{row.schema_version}",
                      row.model, row.mode, row.engine, source_of(row, label), f"{row.created_at:%Y-%m-%d}",
                      certifies(row), escape(_applies(session, row, label, now)))  # fmt: skip


@calibrations.command("remove")
def remove(
    ident: Annotated[
        str, typer.Argument(metavar="ID", help="a stored calibration's id (`formwork calibrations`)")
    ],
    yes: Annotated[
        bool, typer.Option("--yes", help="remove it: without this, only say what would change")
    ] = False,
    db: DbOption = None,
) -> None:
    """Remove a stored calibration: runs with its key then apply the next one (stored, else shipped)."""
    from formwork.db.calibration_store import CalibrationProblem, remove_calibration
    from formwork.db.calibrations import policy_for, statement
    from formwork.tasks.evaluation.key import CalibrationKey

    with opened(db, write=True) as session:
        try:
            row = remove_calibration(session, ident)
        except CalibrationProblem as exc:
            fail(str(exc))
        key = CalibrationKey(**{name: getattr(row, name) for name in CalibrationKey.__dataclass_fields__})
        was = f"calibration {row.id} ({row.schema_name}@v{row.schema_version}, {row.model}, {row.mode})"
        then = statement(policy_for(session, key).applied)
        if not yes:
            session.rollback()
            fail(f"{was} not removed: pass --yes to remove it; runs like it would then apply {then}")
        session.commit()
    out.print(f"removed {was}; runs like it now apply {then}", highlight=False)
