"""`formwork review`: write a run's results as one self-contained HTML page to check them at a glance;
with --unsure, the page where a person settles the values the run was unsure of, and `formwork settle`
to store what they decided."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer

from formwork.flows.cli.common import DbOption, chosen_run, err, fail, opened


def review(
    out_file: Annotated[Path, typer.Option("--out", help="the HTML file to write")],
    run: Annotated[int | None, typer.Option("--run", help="a run id (default: the latest run)")] = None,
    status: Annotated[
        list[str] | None, typer.Option("--status", help="ok, partial or failed; repeat for several")
    ] = None,
    unsure: Annotated[
        bool,
        typer.Option(
            "--unsure", help="the rows with unsure values, to settle by keyboard (then `formwork settle`)"
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """Write the review page: texts with highlighted evidence, JSON, statuses, errors, notes."""
    from formwork.flows.review import STATUSES, load_review, render_review

    unknown = sorted(set(status or []) - set(STATUSES))
    if unknown:
        fail(f"unknown status {', '.join(unknown)}: use {', '.join(STATUSES)}")
    if unsure and status:
        fail("--unsure shows the rows with unsure values, whatever their status: leave out --status")
    with opened(db) as session:  # never the write lock: a run may be writing
        run_id = chosen_run(session, run)
        if unsure:
            from formwork.flows.settle import settle_page

            page, rows, values = settle_page(session, run_id)
        else:
            items = load_review(session, run_id, status)
    if not unsure:
        title = f"formwork run {run_id}" + (f" ({', '.join(status)})" if status else "")
        page = render_review(items, title)
    try:
        out_file.write_text(page, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out_file}: {exc}")
    if unsure:
        err.print(f"wrote {out_file}: {values} unsure values in {rows} rows of run {run_id}; open it, settle "
                  f"each (a, f, n), export, then `formwork settle settle-run-{run_id}.jsonl`")  # fmt: skip
    else:
        err.print(f"wrote {out_file}: {len(items)} records of run {run_id}")


def settle(
    file: Annotated[Path, typer.Argument(help="the decisions the page exported (settle-run-N.jsonl)")],
    who: Annotated[str | None, typer.Option("--who", help="who decided (default: your user name)")] = None,
    db: DbOption = None,
) -> None:
    """Store a person's decisions on unsure values beside the model's reading; settled rows become ok."""
    from formwork.flows.settle import SettleProblem
    from formwork.flows.settle import settle as store

    person = who or getpass.getuser()
    with opened(db, write=True) as session:
        try:
            done = store(session, file, person)
        except SettleProblem as exc:
            fail(str(exc))
        session.commit()
    err.print(f"stored {done.decisions} decisions by {person} on {done.rows} rows; {done.ok} rows are now ok "
              "(every value certified or confirmed)")  # fmt: skip
