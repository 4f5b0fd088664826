"""Flow `evaluate`: gold records through the real pipeline in each mode, scored, stored, published.

Each mode is an ordinary run (the same chunk task, engines from Settings, statuses decided like
production), so what is scored is what production would store. The gold records of each mode live
under their own source label (`eval:<gold file>#<mode>`), because a result is kept once per
(record, schema version): two modes on one set of records would overwrite each other's rows. Every
record is processed again on every eval (`redo`), and a score always comes from this run's own rows
(`run_results`), never from the current result, which a better earlier answer may have kept.

The scores of each mode go to `eval_runs`, linked to the run that made the rows; the tables go to a
Prefect artifact; the chart to a PNG with its numbers beside it. `--calibrate` stores a calibration
per mode under that mode's full key (tasks.evaluation.key) and may write it as a file to ship;
`--verify` runs with the bounds a run would apply and says whether these records confirm their
guarantee, break it, or do not contradict it (tasks.evaluation.verification); `--half` takes one
fixed half of the gold set for either.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.calibrations import policy_for, statement
from formwork.db.models import Calibration, EvalRun, Record, Run, RunResult
from formwork.db.session import session_factory
from formwork.db.store import store_records
from formwork.flows.eval_steps import (
    calibrated,
    certified_report,
    costs,
    score_run,
    verified,
)
from formwork.flows.run_start import checked_engines, new_context
from formwork.flows.runner import chunked, run_chunks
from formwork.flows.secret_free import secret_free_flow
from formwork.schemas.registry import Schema, load_checked_schema
from formwork.tasks.confidence.certify import TARGET
from formwork.tasks.evaluation.calibration import pooled_fields
from formwork.tasks.evaluation.certified import FieldCount
from formwork.tasks.evaluation.gold import GoldRecord, Half, load_gold
from formwork.tasks.evaluation.key import CalibrationKey, calibration_key, pipeline_version
from formwork.tasks.evaluation.replay import replayed, same_readings
from formwork.tasks.evaluation.scoring import OUTCOMES
from formwork.tasks.extract import NOTES_FREE
from formwork.tasks.modes import MODES
from formwork.tasks.presets import run_warning
from formwork.tasks.settings import Settings
from formwork.tasks.sources import InputRecord

MIN_TARGET, MAX_TARGET = 0.5, 0.999  # below a coin flip certifies nothing; 1 no finite gold set reaches


def _publish(reports: dict[str, dict[str, Any]], title: str) -> None:
    """The tables as Prefect artifacts: one row per mode, and the confusion tables in markdown."""
    table = [
        {"mode": mode, **{o: r["outcomes"][o] for o in OUTCOMES}, "share_ok": round(r["share_ok"], 3),
         "precision_ok": None if r["precision_ok"] is None else round(r["precision_ok"], 3),
         **{f"acc_{k}": round(v, 3) for k, v in r["field_accuracy"].items()},
         **{f"read_{k}": round(v, 3) for k, v in r.get("read_accuracy", {}).items()},
         "tokens_per_record": round(r["prompt_tokens_per_record"] + r["completion_tokens_per_record"], 1),
         "seconds_per_record": round(r["wall_seconds_per_record"], 2)}
        for mode, r in reports.items()
    ]  # fmt: skip
    create_table_artifact(table=table, key="eval-scores", description=title)
    lines = [f"# {title}"]
    for mode, report in reports.items():
        for key, confusion in report["confusion"].items():
            predicted = sorted({p for row in confusion.values() for p in row})
            lines.append(f"\n## {mode}: {key} (rows: gold, columns: predicted)\n")
            lines.append("| gold | " + " | ".join(predicted) + " |")
            lines.append("|---" * (len(predicted) + 1) + "|")
            for gold_label, row in sorted(confusion.items()):
                lines.append(f"| {gold_label} | " + " | ".join(str(row.get(p, 0)) for p in predicted) + " |")
    create_markdown_artifact(markdown="\n".join(lines), key="eval-confusion", description=title)


def _checked(target: float, calibrate: bool, verify: bool, export: str | None, measure: bool) -> None:
    if not MIN_TARGET <= target <= MAX_TARGET:
        raise ValueError(f"target {target:g} is outside {MIN_TARGET:g} to {MAX_TARGET:g}: a calibration "
                         "certifies a precision worth having, one gold records can reach")  # fmt: skip
    if sum((calibrate, verify, measure)) > 1:
        raise ValueError("use one of --measure, --calibrate and --verify: measure the gold once, then "
                         "calibrate on one half and verify on the other (--from-run)")  # fmt: skip
    if export and not calibrate:
        raise ValueError("--export writes the calibration --calibrate stores: add --calibrate")


def _stored_key(session: Session, run: Run) -> CalibrationKey:
    """The key of the rows a measured run holds, as this build would read them: refused where the
    readers or prompts have changed since (the readings would not be this build's)."""
    stored = (run.confidence or {}).get("key")
    if stored is None:
        made = session.scalar(select(Calibration).where(Calibration.run_id == run.id).limit(1))
        stored = {name: getattr(made, name) for name in CalibrationKey.__dataclass_fields__} if made else None
    if stored is None or stored.get("pipeline") is None:
        raise ValueError(f"run {run.id} recorded no calibration key: measure again (--measure)")
    key = CalibrationKey(**stored)
    if not same_readings(key.pipeline, pipeline_version()):
        raise ValueError(f"run {run.id} was read by pipeline {key.pipeline}; this build reads as "
                         f"{pipeline_version()} (readers or prompts changed): measure again")  # fmt: skip
    return replace(key, pipeline=pipeline_version())


def _from_run(
    session: Session, chosen: Schema, golds: list[GoldRecord], run_id: int, mode: str, calibrate: bool,
    verify: bool, target: float, export: str | None, claim: str = "per-field",
) -> dict[str, Any]:  # fmt: skip
    """Calibrate or verify on the rows a measured run stored (tasks.evaluation.replay), no model call."""
    run = session.get(Run, run_id)
    alone = mode == "one-pass" and run is not None and run.source.endswith("#two-readings")
    if run is None or run.flow != "evaluate" or not (run.source.endswith(f"#{mode}") or alone):
        raise ValueError(f"run {run_id} is no `formwork eval` of mode {mode} in this database")
    key = replace(_stored_key(session, run), mode=mode)
    stored = set(session.scalars(select(Record.key).join(RunResult, RunResult.record_id == Record.id)
                                 .where(RunResult.run_id == run_id)))  # fmt: skip
    missing = [g.id for g in golds if g.id not in stored]
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise ValueError(f"run {run_id} did not read {len(missing)} of these gold records ({shown}): measure "
                         "them (--measure) first")  # fmt: skip
    reading = NOTES_FREE if alone else None  # the one-pass call (tasks.evaluation.replay.reading_alone)
    report, rows = score_run(session, chosen, run_id, golds, run.source, reading)
    report |= costs(session, run_id, reading)
    if reading:
        report["reading"] = f"{reading} reading of run {run_id}"
    if calibrate:
        report["calibrated"] = calibrated(session, key, run_id, golds, chosen, rows, target, export, claim)
    if verify:
        applied = policy_for(session, key)
        policy = applied.policy
        if policy.model is None:
            raise ValueError(f"no calibration applies to these rows ({applied.applied['guarantee']})")
        counts, ok, ok_right = replayed(chosen, rows, policy.model, policy.claims)
        report |= certified_report(counts) | {"ok": ok, "precision_ok": ok_right / ok if ok else None}
        report["verified"] = verified(counts, ok, ok_right, applied.applied, statement(applied.applied))
    return report


@secret_free_flow("evaluate")
def evaluate(
    gold: str,
    schema: str,
    modes: list[str] | None = None,
    limit: int | None = None,
    db_url: str | None = None,
    chart: str | None = None,
    calibrate: bool = False,
    target: float = TARGET,
    verify: bool = False,
    half: Half | None = None,
    export: str | None = None,
    measure: bool = False,
    from_run: int | None = None,
    claim: str = "per-field",
) -> dict[str, dict[str, Any]]:
    """Score each mode on the gold records of `gold` (files, comma-separated; of one `half`, if given);
    return mode -> scores (with `run_id` and `eval_id`).

    Without `calibrate` each mode runs as production would, its matching calibration applied; `verify`
    then says whether these records confirm that calibration's guarantee, break it, or do not
    contradict it. `measure` runs measuring
    (nothing certified, nothing dropped). With `calibrate` it measures too, fits the score, certifies
    each field for `target`, stores the calibration under the mode's full key and writes it into
    `export` as a file to ship, if given. `from_run`: calibrate or verify on the rows a measured run
    stored, with no model call (one mode; `one-pass` reads a `two-readings` run's notes-free reading).
    `claim`: what `calibrate` certifies: `per-field`, or `pooled[:FIELD,...]`, one claim over the
    kept values of those fields together (tasks.evaluation.calibration.pooled_fields).
    Calibrating and verifying need a gold that names every field."""
    _checked(target, calibrate, verify, export, measure)
    settings = Settings()
    modes = modes or [settings.mode]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown mode {', '.join(unknown)}: use {', '.join(MODES)}")
    if from_run is not None and len(modes) != 1:
        raise ValueError("--from-run reads one run: name its mode (--mode), not several")
    chosen = load_checked_schema(schema)
    if claim != "per-field" and not calibrate:
        raise ValueError("--claim chooses what --calibrate certifies: add --calibrate")
    pooled_fields(chosen, claim)  # a claim naming no field of the schema: one line, before any model call
    files = [Path(g).resolve() for g in gold.split(",")]
    golds = load_gold(files, chosen, limit, complete=calibrate or verify or measure, half=half)
    sessions = session_factory(db_url or settings.db_url)
    batch, reports = uuid.uuid4().hex[:12], {}
    if from_run is not None:
        with sessions() as session:
            report = _from_run(session, chosen, golds, from_run, modes[0], calibrate, verify, target, export,
                               claim)  # fmt: skip
            session.commit()
        return {modes[0]: report | {"run_id": from_run, "half": half}}
    with checked_engines(settings, chosen) as engines:
        for mode in modes:
            source = f"eval:{','.join(map(str, files))}#{mode}"
            with sessions() as session:
                ids = store_records(session, source, (InputRecord(g.id, g.text, g.meta) for g in golds))
            production = settings.model_copy(update={"mode": mode})
            key = calibration_key(production, chosen, engines)
            context = new_context(sessions, production, chosen, engines, flow="evaluate", source=source,
                                  redo=True, measuring=calibrate or measure)  # fmt: skip
            run_chunks(context, chunked(ids, settings.chunk_size))
            with sessions() as session:
                report, rows = score_run(session, chosen, context.run_id, golds, source)
                report |= costs(session, context.run_id)
                report["half"] = half
                if calibrate:
                    report["calibrated"] = calibrated(session, key, context.run_id, golds, chosen, rows,
                                                      target, export, claim)  # fmt: skip
                if verify:
                    run = session.get(Run, context.run_id)
                    applied = (run.confidence if run else None) or {}
                    said = statement(applied) if applied else "no calibration applied"
                    ok, precision = report["ok"], report["precision_ok"] or 0.0
                    counts = {name: FieldCount(**c) for name, c in report["certified"].items()}
                    report["verified"] = verified(counts, ok, round(precision * ok), applied, said)
                report["warning"] = run_warning(settings.preset, settings.allow_chat_in_constrained)
                row = EvalRun(batch=batch, run_id=context.run_id, gold_source=",".join(map(str, files)),
                              schema_name=chosen.name, schema_version=chosen.version, mode=mode,
                              records=len(golds), scores=report)  # fmt: skip
                session.add(row)
                session.commit()
                reports[mode] = report | {"run_id": context.run_id, "eval_id": row.id}
            get_run_logger().info("eval %s, %s: %s", batch, mode, report["outcomes"])
    names = ", ".join(f.name for f in files)
    title = f"{chosen.label} on {names}, {len(golds)} records, {settings.engine} engine"
    _publish(reports, title)
    if chart:
        from formwork.tasks.evaluation.chart import write_chart

        write_chart(reports, chart, title)
    return reports
