"""The retry-queue commands: `formwork retry`, `formwork queue`, `formwork requeue ID`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from formwork.flows.cli.common import (
    DbOption,
    database_gone,
    database_in_environment,
    fail,
    open_database,
    opened,
    out,
    printable,
    settings_in_environment,
)
from formwork.flows.cli.preflight import ModelOption, checked_settings, chosen_reader


def _parse_overrides(pairs: list[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r}: use KEY=VALUE, e.g. reasoning_max_tokens=1024")
        overrides[key.strip()] = value.strip()
    return overrides


def retry(
    limit: Annotated[int, typer.Option(min=1, help="claim at most N due entries")] = 100,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="a setting for this retry only, KEY=VALUE (e.g. vllm_model=big)"),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(help="retry (the same reader again) or escalation (the stronger one); default both"),
    ] = None,
    escalate_to: Annotated[
        str | None, typer.Option(help="read escalations with this reader instead of the one each entry names")
    ] = None,
    db: DbOption = None,
    model: ModelOption = None,
) -> None:
    """Reprocess the due entries of the retry queue, optionally with other settings: a retry with the
    same reader, an escalation with the stronger one (its certified values join the first reader's)."""
    from pydantic import ValidationError
    from sqlalchemy.exc import OperationalError

    from formwork.db.keeping import DatabaseUnavailable
    from formwork.flows.prefect_env import cli_flows, explained
    from formwork.flows.reprocess_failed import reprocess_failed, secret_overrides
    from formwork.flows.reprocess_readers import ReaderUnavailable
    from formwork.flows.run_guards import RunStopped
    from formwork.tasks.settings import Settings

    overrides = _parse_overrides(set_ or []) | chosen_reader(model)
    if kind not in (None, "retry", "escalation"):
        fail(f"--kind is retry or escalation, not {kind!r}")
    try:
        Settings(**overrides, **({"escalate_to": escalate_to} if escalate_to else {}))  # refused here, named
    except ValidationError as exc:
        fail(f"a --set or --escalate-to value is wrong: {exc}")
    if model:
        checked_settings(overrides)  # an unknown or missing model: one line, before Prefect
    hidden = secret_overrides(overrides)  # Prefect stores flow parameters: secrets go by environment
    shown = {k: v for k, v in overrides.items() if k not in hidden}
    gone = (DatabaseUnavailable, OperationalError)
    url = open_database(db)  # a mistyped or unreachable database: one line, before Prefect starts
    try:
        with (
            cli_flows(),
            explained(*gone, ReaderUnavailable, RunStopped),
            database_in_environment(url),
            settings_in_environment(hidden),
        ):
            summaries = reprocess_failed(limit=limit, overrides=shown, kind=kind,  # type: ignore[arg-type]
                                         escalate_to=escalate_to)  # fmt: skip
    except gone as exc:
        fail(database_gone(exc), code=1)
    except ReaderUnavailable as exc:
        fail(str(exc))
    except RunStopped as exc:  # SIGTERM: the claims in hand were read or given back; 143 as a shell says
        fail(str(exc), code=143)
    if not summaries:
        out.print("nothing due in the retry queue")
    for summary in summaries:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
        out.print(f"run {summary.run_id}: {summary.schema}, {summary.records} records: {counts}")


def queue(
    state: Annotated[
        str | None, typer.Option(help="waiting, claimed, dead or stale (its text changed)")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="show at most N entries")] = 50,
    db: DbOption = None,
) -> None:
    """Show the retry queue: entries, attempts, next try and last error."""
    from formwork.db.queue import list_entries, queue_counts
    from formwork.tasks.redact import redact

    with opened(db) as session:
        counts, entries = queue_counts(session), list_entries(session, state, limit)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "empty"
    table = Table(title=f"retry queue: {summary}")
    for column in (
        "id",
        "record",
        "schema",
        "state",
        "waits for",
        "attempts",
        "next try (UTC)",
        "last error",
    ):
        table.add_column(column, overflow="fold")
    for e in entries:  # what a record, a model or a user's schema wrote: shown as text, never obeyed
        retry = f"retry by {e.setup}" if e.setup else "retry"  # the reader whose run queued it reads it
        waits = f"escalation: {redact(e.escalate_to or '')}" if e.kind == "escalation" else retry
        cells = (
            str(e.id), str(e.record_id), f"{e.schema_name}@v{e.schema_version}", e.state, waits,
            str(e.attempts), e.next_attempt_at.strftime("%Y-%m-%d %H:%M:%S"), redact(e.last_error)[:200],
        )  # fmt: skip
        table.add_row(*(Text(printable(cell)) for cell in cells))
    out.print(table)


def requeue(
    entry_id: Annotated[int, typer.Argument(help="the queue entry id (see `formwork queue`)")],
    db: DbOption = None,
) -> None:
    """Put a queue entry (dead or waiting) back for an immediate retry, attempts reset."""
    from formwork.db.queue import requeue as requeue_entry

    with opened(db, write=True) as session:
        try:
            entry = requeue_entry(session, entry_id)
        except LookupError as exc:
            fail(f"{exc}; see `formwork queue`")
        out.print(f"entry {entry.id} (record {entry.record_id}) is waiting again; run `formwork retry`")
