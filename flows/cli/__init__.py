"""The `formwork` command: a thin Typer layer over the flows and the database queries.

Commands print data to stdout (tables, JSONL, CSV) and progress and errors to stderr, so
`formwork results --format jsonl > out.jsonl` gives a clean file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from formwork.flows.cli.audit import audit
from formwork.flows.cli.calibrations import calibrations
from formwork.flows.cli.common import (
    DbOption,
    database_gone,
    database_in_environment,
    err,
    fail,
    out,
    resolve_db,
    settings_in_environment,
)
from formwork.flows.cli.doctor import doctor
from formwork.flows.cli.eval import eval_gold
from formwork.flows.cli.examples import examples
from formwork.flows.cli.models import models
from formwork.flows.cli.preflight import ModelOption, checked_run, chosen_reader
from formwork.flows.cli.queue import queue, requeue, retry
from formwork.flows.cli.results import results
from formwork.flows.cli.review import review, settle
from formwork.flows.cli.schemas import schemas
from formwork.flows.prefect_env import apply_defaults, cli_flows, explained

if TYPE_CHECKING:
    from formwork.db.claims import Holders

apply_defaults()

app = typer.Typer(
    help="Formwork: turn messy messages into rows you can trust. "
    "A free reasoning pass, then a grammar-constrained formatting pass, validated and stored.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _count_lines(path: Path) -> int | None:
    if path.is_file() and path.suffix.lower() in (".jsonl", ".ndjson", ".csv"):
        with path.open("rb") as handle:
            lines = sum(1 for line in handle if line.strip())
        return lines - (path.suffix.lower() == ".csv")
    return None


@app.command()
def run(
    input: Annotated[
        str,
        typer.Argument(
            help="a .jsonl or .csv file (with a 'text' field), a .txt/.eml/.mbox file, a folder of them, "
            "or a database URL (postgresql://… or sqlite:///…) with --query or --table"
        ),
    ],
    schema: Annotated[str, typer.Option("--schema", "-s", help="a built-in schema name or a .json file")],
    db: DbOption = None,
    model: ModelOption = None,
    limit: Annotated[int | None, typer.Option(min=0, help="process only the first N records")] = None,
    chunk_size: Annotated[
        int | None, typer.Option(min=1, help="records per Prefect task (default: the chunk_size setting)")
    ] = None,
    follow_symlinks: Annotated[
        bool, typer.Option(help="in a folder input, follow symbolic links (even out of the folder)")
    ] = False,
    query: Annotated[str | None, typer.Option(help="database input: a SELECT giving id and text")] = None,
    table: Annotated[str | None, typer.Option(help="database input: a table to read")] = None,
    id_column: Annotated[str, typer.Option(help="database input: the unique key column")] = "id",
    text_column: Annotated[str, typer.Option(help="database input: the column holding the text")] = "text",
    updated_column: Annotated[
        str | None, typer.Option(help="database input: a last-changed column; nightly runs read rows past it")
    ] = None,
    wait: Annotated[
        bool,
        typer.Option(
            help="records another run holds (one killed moments ago, or still working): wait "
            "until it finishes them or its lease lapses, then process them"
        ),
    ] = False,
    escalate_to: Annotated[
        str | None,
        typer.Option(
            help="a stronger reader for rows held back only by their values' thresholds (those unsure "
            "of a field its calibration certifies): a model from `formwork models`, @MODE, NAME@MODE, "
            "or vllm:URL#MODEL (default: the escalate_to setting)"
        ),
    ] = None,
    escalate: Annotated[
        str | None,
        typer.Option(
            help="queue: such rows wait in the retry queue; now: read them with --escalate-to "
            "before the run ends"
        ),
    ] = None,
) -> None:
    """Extract SCHEMA from every record of INPUT; show progress and a summary table.

    Exits 3 when records are left without a result because another run holds them (see --wait), 4 when
    every record of the run failed. A missing input, a schema or model mistake is refused before Prefect
    or a model starts."""
    reader = chosen_reader(model)
    checked_run(input, schema, follow_symlinks, reader)  # before the flow's imports (Prefect's seconds)
    from sqlalchemy.exc import OperationalError

    from formwork.db.keeping import DatabaseUnavailable
    from formwork.db.store import SchemaChanged
    from formwork.flows.batch_extract import batch_extract
    from formwork.flows.progress import listening
    from formwork.flows.run_guards import RunStopped
    from formwork.schemas.registry import SchemaProblem
    from formwork.tasks.engines.base import EngineError
    from formwork.tasks.sources import SourceProblem
    from formwork.tasks.sources.sql import is_database_url, source_in_environment

    total = None if is_database_url(input) else _count_lines(Path(input))
    if limit is not None and total is not None:
        total = min(total, limit)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=err, transient=False) as progress:
        bar = progress.add_task("starting (model and Prefect)", total=total)

        def advance(status: str) -> None:
            progress.update(bar, advance=1, description="extracting")

        problems = (SchemaProblem, SchemaChanged, SourceProblem, EngineError, FileNotFoundError, ImportError,
                    ValueError)  # fmt: skip
        gone = (DatabaseUnavailable, OperationalError)
        try:
            with (
                listening(advance),
                cli_flows(),
                explained(*problems, *gone, RunStopped),
                database_in_environment(resolve_db(db)),
                settings_in_environment(reader),  # never a (stored) flow parameter
                source_in_environment(input) as source,
            ):
                summary = batch_extract(
                    source, schema, limit=limit, chunk_size=chunk_size, follow_symlinks=follow_symlinks,
                    query=query, table=table, id_column=id_column, text_column=text_column,
                    updated_column=updated_column, wait=wait, escalate_to=escalate_to,
                    escalate=escalate,  # type: ignore[arg-type]
                )  # fmt: skip
        except problems as exc:
            progress.stop()
            fail(str(exc))
        except gone as exc:
            progress.stop()
            fail(database_gone(exc), code=1)
        except RunStopped as exc:  # SIGTERM: the run stopped cleanly; 143 as a shell reports it
            progress.stop()
            fail(str(exc), code=143)
    table = Table(title=f"run {summary.run_id}: {summary.schema}, {summary.records} records, {summary.state}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for what, count in summary.rows():
        table.add_row(what, count)
    out.print(table)
    for escalated in summary.escalations:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(escalated.statuses.items()))
        out.print(f"escalated in run {escalated.run_id}: {escalated.records} records read again by the "
                  f"stronger reader: {counts}")  # fmt: skip
    if summary.records == 0 and not summary.held.records:
        out.print(
            "nothing to do: every record of this input already has a result for this schema version "
            "from this reader (another model or mode, --model NAME@MODE, reads them again)"
        )
    out.print(f"results: formwork results --run {summary.run_id} [--status failed] [--format jsonl]")
    if summary.held.records:
        fail(_held_message(summary.held), code=3)
    if summary.records and summary.statuses.get("failed", 0) == summary.records:
        fail(f"every record of run {summary.run_id} failed ({summary.records} of {summary.records}): see why "
             f"with `formwork results --run {summary.run_id}`", code=4)  # fmt: skip


def _held_message(held: Holders) -> str:
    """Records another run holds: how many, who, until when, and what to do (never "nothing to do")."""
    from formwork.db.models import utcnow

    count = f"{held.records} records of this input have no result yet"
    if held.until is None or held.until <= utcnow():
        return f"{count} (another run held them; it has let go): run again to process them"
    runs = ", ".join(str(run) for run in held.runs)
    who = f"run {runs} holds them" if len(held.runs) == 1 else f"runs {runs} hold them"
    return (
        f"{count}: {who} until {held.until:%H:%M:%S} UTC (a run holds its records for run_lease_s after "
        "its last heartbeat, so one killed moments ago still holds them). Run again after that, or with "
        "--wait to wait for them and process them"
    )


for command in (results, schemas, retry, queue, requeue, review, doctor):
    app.command()(command)
app.command(name="eval")(eval_gold)
app.command()(settle)
app.command()(examples)
app.add_typer(models, name="models")
app.add_typer(audit, name="audit")
app.add_typer(calibrations, name="calibrations")
