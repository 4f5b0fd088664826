"""`formwork eval --calibrate --from-run B --escalated-from A`: calibrate the stronger reader on the gold
records the first reader escalates to it, from two stored eval runs, with no model call.

A cascade sends the stronger reader only the records its first reader leaves unsure, where the stronger
reader's calibration measured on all records overstates its precision (tasks.escalation). Here the
first reader's eval run `A` is decided again under the calibration that reader's runs apply now (tasks.
evaluation.replay: a record's readings do not depend on it), the records whose rows it leaves not `ok`
are the escalated ones (tasks.escalation.escalated), and the stronger reader's run `B` is calibrated on
those alone. The calibration is stored for B's key and `escalated_from` naming A and its calibration
(db.escalated_calibrations), so it certifies B's values only in rows that reader under that calibration
escalated, and nothing else.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.calibration_store import store_calibration
from formwork.db.calibrations import applying, calibrated_policy
from formwork.db.escalated_calibrations import first_identity
from formwork.db.models import Record, Run, RunResult
from formwork.db.session import session_factory
from formwork.flows.eval_steps import gold_hash, score_run
from formwork.schemas.registry import Schema, load_checked_schema
from formwork.tasks.confidence.certify import LEVEL, TARGET
from formwork.tasks.escalation import escalated, joint_level
from formwork.tasks.evaluation.calibration import calibrate, field_targets, pooled_fields
from formwork.tasks.evaluation.gold import GoldRecord, Half, load_gold
from formwork.tasks.evaluation.key import CalibrationKey, pipeline_version
from formwork.tasks.evaluation.replay import same_readings
from formwork.tasks.extract import NOTES_FREE
from formwork.tasks.settings import Settings

STRONGER, FIRST = "the stronger reader's", "the first reader's"


def _eval_run(session: Session, run_id: int, whose: str) -> Run:
    run = session.get(Run, run_id)
    if run is None or run.flow != "evaluate":
        raise ValueError(f"run {run_id} ({whose}) is no `formwork eval` run in this database: name the eval "
                         "runs of both readers on the same gold (each eval prints its run id)")  # fmt: skip
    return run


def _key(run: Run, whose: str) -> CalibrationKey:
    """The key of an eval run's rows as this build reads them; refused where its readers have changed."""
    stored = (run.confidence or {}).get("key")
    if stored is None or stored.get("pipeline") is None:
        raise ValueError(f"run {run.id} ({whose}) recorded no calibration key: measure again (--measure)")
    if not same_readings(stored["pipeline"], pipeline_version()):
        now = pipeline_version()
        raise ValueError(f"run {run.id} ({whose}) was read by pipeline {stored['pipeline']}; this build "
                         f"reads as {now} (readers or prompts changed): measure again")  # fmt: skip
    return replace(CalibrationKey(**stored), pipeline=pipeline_version())


def _read_all(session: Session, run: Run, golds: list[GoldRecord], whose: str) -> None:
    """Refuse a run that did not read every one of these gold records: both runs must read the same."""
    stored = set(session.scalars(select(Record.key).join(RunResult, RunResult.record_id == Record.id)
                                 .where(RunResult.run_id == run.id)))  # fmt: skip
    if missing := [g.id for g in golds if g.id not in stored]:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise ValueError(f"run {run.id} ({whose}) did not read {len(missing)} of these gold records "
                         f"({shown}): both runs must read the same gold records")  # fmt: skip


def escalated_calibration(session: Session, schema: Schema, golds: list[GoldRecord], second_run: int,
                          first_run: int, mode: str, target: float = TARGET, claim: str = "per-field"
                          ) -> dict[str, Any]:  # fmt: skip
    """Calibrate the reader of eval run `second_run` (in `mode`) on the gold records the reader of eval run
    `first_run` leaves not `ok` under its calibration, and store it for escalations from that reader
    under that calibration (flushed, not committed). What was stored, in words."""
    second, first = _eval_run(session, second_run, STRONGER), _eval_run(session, first_run, FIRST)
    alone = mode == "one-pass" and second.source.endswith("#two-readings")
    if not (second.source.endswith(f"#{mode}") or alone):
        raise ValueError(f"run {second_run} is no `formwork eval` of mode {mode} in this database")
    second_key, first_key = replace(_key(second, STRONGER), mode=mode), _key(first, FIRST)
    if (second_key.schema_hash, first_key.schema_hash) != (schema.digest, schema.digest):
        raise ValueError(f"runs {first_run} and {second_run} must both have read schema {schema.name} as it "
                         "is now: eval both readers on it")  # fmt: skip
    if second_key == first_key:
        raise ValueError(f"runs {first_run} and {second_run} are of the same reader: --escalated-from names "
                         "the first reader's run, --from-run the stronger one's")  # fmt: skip
    _read_all(session, first, golds, FIRST)
    _read_all(session, second, golds, STRONGER)
    found = applying(session, first_key)
    if found is None:
        raise ValueError(f"no calibration applies to run {first_run}'s reader ({first_key.describe()}), "
                         "so its rule escalates every row: calibrate it first (--calibrate)")  # fmt: skip
    row, label = found
    policy = calibrated_policy(row, label).policy
    _, first_rows = score_run(session, schema, first_run, golds, first.source)
    sent = set(escalated(schema, first_rows, policy.model, policy.claims))  # type: ignore[arg-type]
    if not sent:
        raise ValueError(f"run {first_run}'s reader leaves none of these {len(golds)} gold records unsure "
                         f"under calibration {label}: nothing escalates to calibrate on")  # fmt: skip
    chosen = [g for g in golds if g.id in sent]
    _, rows = score_run(session, schema, second_run, chosen, second.source, NOTES_FREE if alone else None)
    targets = {name: t if t != TARGET else target for name, t in field_targets(schema).items()}
    calibrated = calibrate(schema, rows, targets, LEVEL, pooled_fields(schema, claim))
    identity = first_identity(row)
    stored = store_calibration(session, second_key, calibrated, target, gold_hash=gold_hash(chosen),
                               gold_size=len(chosen), run_id=second_run, escalated_from=identity)  # fmt: skip
    values = sum(c.values for c in calibrated.claims.values())
    return {"id": stored.id, "fields": {name: c.sentence() for name, c in calibrated.claims.items()},
            "rows": calibrated.row_sentence(target),
            "covered": f"{stored.values_kept} of {values} escalated gold values kept as certified",
            "escalated": f"{len(chosen)} of {len(golds)} gold records, those run {first_run}'s reader leaves "
                         f"unsure under calibration {label} ({identity})",
            "joint_level": joint_level(row.level, calibrated.level)}  # fmt: skip


def escalated_eval(gold: list[Path], schema: str, second_run: int, first_run: int, *, mode: str | None = None,
                   target: float = TARGET, claim: str = "per-field", half: Half | None = None,
                   limit: int | None = None) -> dict[str, Any]:  # fmt: skip
    """`escalated_calibration` on the gold files and schema named, in the configured database (and mode,
    where `mode` is None), committed."""
    settings = Settings()
    chosen = load_checked_schema(schema)
    golds = load_gold(gold, chosen, limit, complete=True, half=half)
    with session_factory(settings.db_url)() as session:
        said = escalated_calibration(session, chosen, golds, second_run, first_run, mode or settings.mode,
                                     target, claim)  # fmt: skip
        session.commit()
    return said
