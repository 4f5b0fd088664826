"""`formwork audit [--run N | --model NAME[@MODE]] --sample 50 [--seed S] --out audit.html`, `formwork
audit check FILE...` and `formwork audit calibrate FILE...`: a person audits a sample of a run's own
records in the browser, and the guarantee is checked, then measured again, on them. No model is called."""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from formwork.flows.cli.common import DbOption, chosen_run, err, fail, opened, out
from formwork.flows.cli.preflight import chosen_reader
from formwork.tasks.confidence.certify import TARGET

if TYPE_CHECKING:
    from formwork.db.audits import AuditSet
    from formwork.db.calibration_changes import Change
    from formwork.tasks.evaluation.audit import AuditReport

audit = typer.Typer(
    help="Audit a random sample of a run's records: `formwork audit --run N --out audit.html` writes the "
    "page (mark each field right or wrong, export); `check` and `calibrate` read its export.",
    invoke_without_command=True,
)
Files = Annotated[list[Path], typer.Argument(help="audit files exported by the page (audit-run-N.jsonl)")]


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


def _warn(found: AuditSet) -> None:
    """Each answer the audit files contradict themselves on, one line each, before the numbers."""
    for warning in found.warnings:
        err.print(Text(f"warning: {warning}", style="yellow"))


@audit.command()
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
    _warn(found)
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


def _short_of(audited: int, least: int, target: float, level: float, fields: int, coming: int,
              pooled: tuple[str, ...] = ()) -> str:  # fmt: skip
    """Why a field was not certified, and what more audits can do about it at the next look, `coming`
    (which spends less level than this one: it needs more values); `pooled`: the fields claimed together,
    one test, whose count is of their values together."""
    tests = (f"its {fields - len(pooled) + 1} claims ({', '.join(pooled)} pooled as one)" if pooled
             else f"all {fields} fields")  # fmt: skip
    rule = (f"To certify a field at {target:.0%} at look {coming}, with {tests} together at "
            f"{level * 100:.4g}% confidence, {least} of its values must be kept at one threshold, nearly all "
            "right")  # fmt: skip
    if audited < least:
        return (f"{rule}: audit at least {least - audited} more records (a larger --sample, or a later run "
                "made the same way) and pass every file.")  # fmt: skip
    return (
        f"{rule}; the sure values of a field not certified here are too few or wrong too often: more "
        "audited records narrow its bound, but cannot lift a field the run reads wrong."
    )


def _gold_hash(rows: list) -> str:
    payload = sorted([row.record, row.gold] for row in rows)
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _look_hash(gold_hash: str, pooled: tuple[str, ...]) -> str:
    """What makes two calibrates the same look: the same answers (`gold_hash`) tested as the same claim.
    A per-field claim keeps the answers' hash, as every look stored before claims could pool."""
    if not pooled:
        return gold_hash
    return hashlib.sha256(json.dumps([gold_hash, "pooled", *pooled]).encode()).hexdigest()


def _changes(changes: list[Change], against: str) -> list[str]:
    """Per field, one line: what runs like the audited one do now, and under the new calibration."""
    lines = [f"what storing it changes, against {against}:"]
    for change in changes:
        fewer = " (fewer certified)" if change.fewer else ""
        lines.append(f"  {change.field}: {change.before} -> {change.after}{fewer}")
    return lines


@audit.command()
def calibrate(
    files: Files,
    target: Annotated[
        float, typer.Option(min=0.5, max=0.999, help="each field's precision to certify")
    ] = 0.95,
    dry_run: Annotated[bool, typer.Option(help="say what it would certify; store nothing")] = False,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="store it even where it certifies fewer values than the calibration runs like these "
            "apply now (without it, such a calibration is refused and what it would change is shown)",
        ),
    ] = False,
    claim: Annotated[
        str,
        typer.Option(
            help="what to certify, as `formwork eval --calibrate --claim`: per-field (each field its own "
            "claim), or pooled[:FIELD,FIELD] (one claim over the kept values of those fields together, "
            "every field if none named: not a claim about any one of them)"
        ),
    ] = "per-field",
    db: DbOption = None,
) -> None:
    """Measure a calibration on your audited records and store it for the run's key (no model call).

    Refused (exit 2, nothing stored) where it would certify fewer values of some field than what runs like
    the audited one apply now, or drop values they keep unchecked where no calibration applies: each
    field's change is shown, and --replace stores it anyway.

    Each calibrate of the same population's audit (its runs' key, in this database) is a look, and the
    looks share one error budget: look k tests at level budget * 2^-k (tasks.evaluation.audit.look_level),
    stored or refused alike, so auditing more and calibrating again cannot certify more often than the
    level. --dry-run previews the next look at its level and spends nothing; calibrating the same answers
    again (a refused look, then --replace) is the same look, but another --claim on them is another test,
    so another look (trying claims until one passes would otherwise be free)."""
    from sqlalchemy.exc import IntegrityError

    from formwork.db.audits import AuditProblem, next_look, read_audits, run_key, take_look
    from formwork.db.calibration_changes import changes
    from formwork.db.calibration_store import store_calibration
    from formwork.db.calibrations import AUDIT, applying, policy_for, statement
    from formwork.tasks.confidence.certify import terms
    from formwork.tasks.evaluation.audit import look_level, needed
    from formwork.tasks.evaluation.calibration import calibrate as fit_and_certify
    from formwork.tasks.evaluation.calibration import field_targets, pooled_fields

    with opened(db, write=True) as session:
        try:
            found = read_audits(session, files)
            key = run_key(found.runs[0])
        except AuditProblem as exc:
            fail(str(exc))
        try:
            pooled = pooled_fields(found.schema, claim)  # a claim naming no field: one line, no look spent
        except ValueError as exc:
            fail(str(exc))
        _warn(found)
        gold_hash = _gold_hash(found.rows)
        look = next_look(session, key, _look_hash(gold_hash, pooled), target)
        level = 1.0 - look.spent  # the confidence this look certifies at, split over the tests in certify
        targets = {name: t if t != TARGET else target for name, t in field_targets(found.schema).items()}
        calibrated = fit_and_certify(found.schema, [row.gold_row for row in found.rows], targets, level,
                                     pooled)  # fmt: skip
        before = statement(policy_for(session, key).applied)
        current = applying(session, key)
        changed = changes(current[0] if current else None, calibrated.claims)
        against = f"calibration {current[1]}" if current else "no calibration (values kept unchecked)"
        fewer = [change.field for change in changed if change.fewer]
        refused = bool(fewer) and not replace
        if not dry_run:
            take_look(session, look, found.runs[0].id)  # a refused look looked too: it spends
            if not refused:
                row = store_calibration(session, key, calibrated, target, gold_hash=gold_hash,
                                        gold_size=len(found.rows), run_id=found.runs[0].id,
                                        source=AUDIT)  # fmt: skip
            try:
                session.commit()
            except IntegrityError:
                fail(f"another `audit calibrate` of these runs took look {look.number} at the same moment; "
                     "nothing stored: run it again (it will be the next look)")  # fmt: skip
            after = statement(policy_for(session, key).applied)
    claims = calibrated.claims
    certified = sum(c.certified for c in claims.values())
    runs = ", ".join(str(r.id) for r in found.runs)
    table = Table(title=f"{len(found.rows)} audited records of run {runs}: {certified} of {len(claims)} "
                  "fields certified")  # fmt: skip
    for column in ("field", "values", "threshold", "kept right", "lower bound", "target"):
        table.add_column(column, justify="left" if column == "field" else "right")
    for claim in claims.values():
        kept = f"{claim.correct}/{claim.kept}" if claim.certified else "-"
        threshold = f"{claim.threshold:g}" if claim.threshold is not None else "none"
        bound = f"{claim.bound:.3f}" + ("" if claim.certified else " (best)")
        table.add_row(claim.field, str(claim.values), threshold, kept, bound, f"{claim.target:.0%}")
    out.print(table)
    out.print(f"certified at look {look.number}'s level {level:.4g}: {terms(claims, target, level)}",
              highlight=False, soft_wrap=True)  # fmt: skip
    out.print(look.sentence(), highlight=False, soft_wrap=True)
    if certified < len(claims):
        coming = look.number if dry_run else look.number + 1  # the look a calibrate on more records takes
        later = 1.0 - look_level(coming, look.budget)
        least = needed(found.schema, target, later, pooled)
        out.print(_short_of(len(found.rows), least, target, later, len(claims), coming, pooled),
                  highlight=False)  # fmt: skip
    for line in _changes(changed, against):
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    if dry_run:
        out.print(f"--dry-run: nothing stored and no level spent (look {look.number} is still to take); runs "
                  f"like this one still apply {before}", highlight=False)  # fmt: skip
        return
    if refused:
        fail(f"not stored: against {against}, it would certify fewer values of {', '.join(fewer)} (the "
             "table above says how); audit more records, or pass --replace to store it anyway")  # fmt: skip
    out.print(f"stored as calibration {row.id} for runs like run {found.runs[0].id} (same model, schema "
              f"and settings). Before: {before}. From now on: {after}", highlight=False)  # fmt: skip
