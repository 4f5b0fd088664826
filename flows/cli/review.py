"""`formwork review`: write a run's results as one self-contained HTML page to check them at a glance."""

from __future__ import annotations

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
    db: DbOption = None,
) -> None:
    """Write the review page: texts with highlighted evidence, JSON, statuses, errors, notes."""
    from formwork.flows.review import STATUSES, load_review, render_review

    unknown = sorted(set(status or []) - set(STATUSES))
    if unknown:
        fail(f"unknown status {', '.join(unknown)}: use {', '.join(STATUSES)}")
    with opened(db) as session:  # never the write lock: a run may be writing
        run_id = chosen_run(session, run)
        items = load_review(session, run_id, status)
    title = f"formwork run {run_id}" + (f" ({', '.join(status)})" if status else "")
    try:
        out_file.write_text(render_review(items, title), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out_file}: {exc}")
    err.print(f"wrote {out_file}: {len(items)} records of run {run_id}")
