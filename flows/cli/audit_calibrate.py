"""`formwork audit calibrate FILE...`: measure a calibration on a person's audit of a run's own records
and store it for the run's key, unless it would certify fewer values than runs like it apply now. No model
is called."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from formwork.flows.cli.audit_check import Files, warn
from formwork.flows.cli.common import DbOption, fail, opened, out
from formwork.tasks.confidence.certify import TARGET

if TYPE_CHECKING:
    from formwork.db.calibration_changes import Change


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
        warn(found)
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
