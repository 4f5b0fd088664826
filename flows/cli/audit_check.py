"""`formwork audit check FILE...`: per field, were the values a run certified right as often as its
calibration states, by a person's audit of a sample of its records? No model is called."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from formwork.flows.cli.common import DbOption, err, fail, opened, out

if TYPE_CHECKING:
    from formwork.db.audits import AuditSet
    from formwork.tasks.evaluation.audit import AuditReport

Files = Annotated[list[Path], typer.Argument(help="audit files exported by the page (audit-run-N.jsonl)")]


def _claims_table(report: AuditReport) -> Table:
    """Per field and for ok rows: right of kept as certified, the interval, the target and the verdict;
    and how many of every value read were right."""
    from formwork.tasks.confidence.policy import apart

    table = Table(title="values kept as certified, against your answers")
    for column in ("field", "right", "interval", "target", "verdict", "read right"):
        table.add_column(column, justify="left" if column in ("field", "verdict") else "right")
    for claim in [*report.claims, report.rows]:
        read = [report.read.get(name, (0, 0)) for name in claim.pool or (claim.name,)]  # a pool: its fields'
        right, total = sum(r for r, _ in read), sum(t for _, t in read)
        target = claim.target  # its own: a pooled claim's name is no field's, and finds no target by name
        upper = apart(claim.upper, target) if claim.upper < target else f"{claim.upper:.2f}"  # never "0.95"
        interval = f"{claim.lower:.2f}-{upper}" if claim.kept else "-"
        unkept = "none certified" if total else "no ok rows"
        verdict = claim.verdict.replace("rows ", "") if claim.kept else unkept
        table.add_row(escape(claim.name), f"{claim.correct}/{claim.kept}", interval, f"{target:.0%}", verdict,
                      f"{right}/{total}" if total else "-")  # fmt: skip
    return table


def _closing(report: AuditReport, applied: dict[str, Any]) -> str:
    """The verdict in a sentence, and what the numbers above count."""
    if not applied.get("calibration"):
        return ("verdict: nothing to check: the run applied no calibration, so it certified no value and "
                "stated no bound; 'read right' counts how often the values it read were right. `formwork "
                f"audit calibrate FILE...` on {report.to_calibrate} or more audited records measures a "
                "calibration on them.")  # fmt: skip
    return (f"verdict: {report.verdict.replace('rows ', '')} (over the fields; ok rows are measured beside). "
            f"A field's claim can be confirmed from {report.needed} certified values all right; below that "
            "it is at best not contradicted. 'read right' counts every value the run read, certified or "
            "not.")  # fmt: skip


def warn(found: AuditSet) -> None:
    """Each answer the audit files contradict themselves on, one line each, before the numbers."""
    for warning in found.warnings:
        err.print(Text(f"warning: {warning}", style="yellow"))


def check(files: Files, db: DbOption = None) -> None:
    """Per field: were the values the run certified right as often as its calibration states?"""
    from formwork.db.audits import AuditProblem, looks_taken, read_audits, run_key
    from formwork.db.calibrations import statement
    from formwork.tasks.evaluation.audit import check_audit

    with opened(db) as session:
        try:
            found = read_audits(session, files)
        except AuditProblem as exc:
            fail(str(exc))
        applied = [run.confidence or {} for run in found.runs]
        try:
            look = looks_taken(session, run_key(found.runs[0])) + 1  # what a calibrate would need
        except AuditProblem:  # no key: calibrate refuses these runs; its look would be the first
            look = 1
    warn(found)
    if any(a.get("calibration") != applied[0].get("calibration") for a in applied):
        fail("these runs applied different calibrations: check one run's audit at a time")
    report = check_audit(found.schema, found.rows, applied[0], look)
    runs = ", ".join(str(run.id) for run in found.runs)
    said = statement(applied[0]) if applied[0] else "no calibration"
    seeds = ", ".join(str(s) for s in found.seeds)
    out.print(f"audit of run {runs}: {report.records} records of {found.schema.label} (seed {seeds})",
              markup=False, highlight=False)  # fmt: skip
    out.print(f"the run applied {said}", markup=False, highlight=False)
    out.print(_claims_table(report))
    out.print(report.none.sentence(), markup=False, highlight=False)
    for sentence in report.broken(applied[0]):
        out.print(Text(sentence, style="red"))
    out.print(_closing(report, applied[0]), markup=False, highlight=False)
