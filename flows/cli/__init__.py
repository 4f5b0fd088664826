"""The `formwork` command: a thin Typer layer over the flows and the database queries.

Commands print data to stdout (tables, JSONL, CSV) and progress and errors to stderr, so
`formwork results --format jsonl > out.jsonl` gives a clean file.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from formwork.flows.cli.audit import audit
from formwork.flows.cli.common import DbOption, Status, database_in_environment, err, fail, out, resolve_db
from formwork.flows.cli.doctor import doctor
from formwork.flows.cli.eval import eval_gold
from formwork.flows.cli.models import models
from formwork.flows.cli.queue import queue, requeue, retry
from formwork.flows.cli.review import review
from formwork.flows.cli.schemas import schemas
from formwork.flows.prefect_env import apply_defaults, without_heartbeat

apply_defaults()

app = typer.Typer(
    help="Formwork: turn messy messages into rows you can trust. "
    "A free reasoning pass, then a grammar-constrained formatting pass, validated and stored.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


class Format(StrEnum):
    table = "table"
    jsonl = "jsonl"
    csv = "csv"


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
) -> None:
    """Extract SCHEMA from every record of INPUT; show progress and a summary table."""
    from formwork.db.store import SchemaChanged
    from formwork.flows.batch_extract import batch_extract
    from formwork.flows.progress import listening
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

        try:
            with (
                listening(advance),
                without_heartbeat(),
                database_in_environment(resolve_db(db)),
                source_in_environment(input) as source,
            ):
                summary = batch_extract(
                    source, schema, limit=limit, chunk_size=chunk_size, follow_symlinks=follow_symlinks,
                    query=query, table=table, id_column=id_column, text_column=text_column,
                    updated_column=updated_column,
                )  # fmt: skip
        except (
            SchemaProblem,
            SchemaChanged,
            SourceProblem,
            EngineError,
            FileNotFoundError,
            ImportError,
        ) as exc:
            progress.stop()
            fail(str(exc))
    table = Table(title=f"run {summary.run_id}: {summary.schema}, {summary.records} records, {summary.state}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for what, count in summary.rows():
        table.add_row(what, count)
    out.print(table)
    if summary.records == 0:
        out.print("nothing to do: every record of this input already has a result for this schema version")
    out.print(f"results: formwork results --run {summary.run_id} [--status failed] [--format jsonl]")


@app.command()
def results(
    run: Annotated[int | None, typer.Option("--run", help="a run id (default: the latest run)")] = None,
    status: Annotated[Status | None, typer.Option(help="ok, partial or failed")] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="table, jsonl or csv")] = Format.table,
    db: DbOption = None,
) -> None:
    """Show stored results: a table to read, or JSONL/CSV for the next program."""
    from formwork.db.queries import latest_run_id, result_rows
    from formwork.db.session import reader_factory
    from formwork.flows.verdicts import verdict_rows

    with reader_factory(resolve_db(db))() as session:
        run_id = run if run is not None else latest_run_id(session)
        rows = result_rows(session, run_id, status.value if status else None)
    if format is Format.jsonl:
        for row in rows:
            sys.stdout.write(json.dumps(row | {"verdicts": verdict_rows(row)}, ensure_ascii=False) + "\n")
    elif format is Format.csv:
        _write_csv(rows)
    else:
        _print_results(rows, run_id)


def _write_csv(rows: list[dict]) -> None:
    """One line per record; a cell that begins like a spreadsheet formula is text (tasks.spreadsheet)."""
    from formwork.flows.verdicts import summary_line
    from formwork.tasks.spreadsheet import Writer

    fields = sorted({key for row in rows for key in (row["data"] or {})})
    writer = Writer(sys.stdout)
    writer.writerow(
        ["record", "status", "reasoning_finish", "formatting_finish", "attempts", "errors", "verdicts",
         *fields]
    )  # fmt: skip
    for row in rows:
        data = row["data"] or {}
        values = [json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else v for v in
                  (data.get(f) for f in fields)]  # fmt: skip
        writer.writerow([row["record"], row["status"], row["reasoning_finish"], row["formatting_finish"],
                         row["attempts"], "; ".join(row["errors"]), summary_line(row).replace("\n", "; "),
                         *values])  # fmt: skip


def _print_results(rows: list[dict], run_id: int | None) -> None:
    """A table for a person: each record's data and, per field, kept, dropped or refused and why in a few
    words (the judge's full sentences are in `--format jsonl`); then what to do next."""
    from rich.markup import escape

    from formwork.flows.verdicts import next_step, summary_line

    table = Table(title=f"results of run {run_id}" if run_id else "results")
    for column in ("record", "status", "data", "fields"):
        table.add_column(column, overflow="fold")
    colours = {"ok": "green", "partial": "yellow", "failed": "red"}
    for row in rows:
        data = json.dumps(row["data"], ensure_ascii=False) if row["data"] else ""
        status = f"[{colours[row['status']]}]{row['status']}[/]"
        table.add_row(escape(row["record"]), status, escape(data), escape(summary_line(row)))
    out.print(table)
    out.print(escape(next_step(rows)), highlight=False)


for command in (schemas, retry, queue, requeue, review, doctor):
    app.command()(command)
app.command(name="eval")(eval_gold)
app.add_typer(models, name="models")
app.add_typer(audit, name="audit")
