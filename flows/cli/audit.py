"""`formwork audit [--run N | --model NAME[@MODE]] --sample 50 [--seed S] --out audit.html`, `formwork
audit check FILE...` and `formwork audit calibrate FILE...`: a person audits a sample of a run's own
records in the browser, and the guarantee is checked, then measured again, on them. No model is called.

This module is the command group and the page; `check` is flows.cli.audit_check and `calibrate`
flows.cli.audit_calibrate, registered here so that neither imports this one.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated

import typer

from formwork.flows.cli.audit_calibrate import calibrate
from formwork.flows.cli.audit_check import check
from formwork.flows.cli.common import DbOption, chosen_run, err, fail, opened
from formwork.flows.cli.preflight import chosen_reader

audit = typer.Typer(
    help="Audit a random sample of a run's records: `formwork audit --run N --out audit.html` writes the "
    "page (mark each field right or wrong, export); `check` and `calibrate` read its export.",
    invoke_without_command=True,
)


@audit.callback()
def page(
    ctx: typer.Context,
    run: Annotated[int | None, typer.Option("--run", help="the run to audit (default: the latest)")] = None,
    sample: Annotated[int, typer.Option("--sample", min=1, help="how many records to draw")] = 50,
    seed: Annotated[
        int | None, typer.Option("--seed", help="the sample's seed (default: a fresh one)")
    ] = None,
    out_file: Annotated[Path | None, typer.Option("--out", help="the HTML page to write")] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="NAME[@MODE]: audit the latest run of this reader that stored rows (as `formwork run "
            "--model` names it; NAME alone: of any mode); not with --run",
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Write the audit page: a uniform random sample of a run's records to mark right or wrong."""
    if ctx.invoked_subcommand is not None:
        return
    from formwork.db.audits import AuditProblem
    from formwork.flows.audit import audit_page

    if out_file is None:
        fail("--out FILE.html: where to write the page")
    chosen_reader(model)  # a malformed NAME@MODE: the one line run, retry and eval give
    seed = seed if seed is not None else secrets.randbelow(1_000_000)
    with opened(db) as session:
        run_id = chosen_run(session, run, model)
        try:
            html, drawn = audit_page(session, run_id, sample, seed)
        except AuditProblem as exc:
            fail(str(exc))
    try:
        out_file.write_text(html, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out_file}: {exc}")
    err.print(f"wrote {out_file}: {drawn} records of run {run_id}, seed {seed}; open it in a browser, mark "
              f"each field, export, then `formwork audit check audit-run-{run_id}.jsonl`")  # fmt: skip


audit.command()(check)
audit.command()(calibrate)
