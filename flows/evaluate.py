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
`--verify` runs with the bounds a run would apply and says whether their guarantee held
(tasks.evaluation.verification); `--half` takes one fixed half of the gold set for either.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.calibrations import export_calibration, statement, store_calibration
from formwork.db.models import Calibration, EvalRun, ModelCall, Record, Run, RunResult
from formwork.db.session import session_factory
from formwork.db.store import store_records
from formwork.flows.runner import checked_engines, chunked, new_context, run_chunks
from formwork.flows.secret_free import secret_free_flow
from formwork.schemas.registry import Schema, load_checked_schema
from formwork.tasks.confidence.certify import LEVEL, TARGET
from formwork.tasks.evaluation.calibration import GoldRow, calibrate, field_targets
from formwork.tasks.evaluation.certified import field_claims, field_counts
from formwork.tasks.evaluation.gold import GoldRecord, Half, load_gold
from formwork.tasks.evaluation.key import CalibrationKey, calibration_key
from formwork.tasks.evaluation.scoring import OUTCOMES, score_record, summarise
from formwork.tasks.evaluation.verification import check
from formwork.tasks.evaluation.verification import verify as verify_claims
from formwork.tasks.modes import MODES
from formwork.tasks.presets import run_warning
from formwork.tasks.settings import Settings
from formwork.tasks.sources import InputRecord

MIN_TARGET, MAX_TARGET = 0.5, 0.999  # below a coin flip certifies nothing; 1 no finite gold set reaches


def _costs(session: Session, run_id: int, records: int, mode: str) -> dict[str, Any]:
    calls = session.execute(
        select(
            ModelCall.prompt_tokens, ModelCall.completion_tokens, ModelCall.duration_s, ModelCall.parse_step
        ).where(ModelCall.run_id == run_id)
    ).all()
    run = session.get(Run, run_id)
    wall = (run.finished_at - run.started_at).total_seconds() if run and run.finished_at else 0.0
    steps = Counter(c.parse_step for c in calls if c.parse_step)
    n = max(records, 1)
    return {
        "calls": len(calls),
        "prompt_tokens_per_record": sum(c.prompt_tokens for c in calls) / n,
        "completion_tokens_per_record": sum(c.completion_tokens for c in calls) / n,
        "model_seconds_per_record": sum(c.duration_s for c in calls) / n,
        "wall_seconds_per_record": wall / n,
        "parse_steps": dict(steps),
    }


def _score_run(session: Session, schema: Schema, run_id: int, golds: list[GoldRecord], source: str
               ) -> tuple[dict[str, Any], list[GoldRow]]:  # fmt: skip
    """The run's report (outcomes, per-field accuracy, what it certified per field) and its rows as
    calibration and verification read them."""
    rows = {
        key: (status, data, nulled, trust)
        for key, status, data, nulled, trust in session.execute(
            select(Record.key, RunResult.status, RunResult.data, RunResult.nulled, RunResult.trust)
            .join(RunResult, RunResult.record_id == Record.id)
            .where(Record.source == source, RunResult.run_id == run_id)
        )
    }  # fmt: skip
    missing = ("failed", None, [], None)  # a record the run did not store counts as no JSON
    scores = [score_record(schema, g.id, g.gold, *rows.get(g.id, missing)[:3]) for g in golds]
    report = summarise(schema, scores, [g.gold for g in golds]).as_dict()
    gold_rows = [GoldRow(g.id, rows.get(g.id, missing)[3] or [], g.gold) for g in golds]
    counts = field_counts(schema, gold_rows)
    values, certified = sum(c.values for c in counts.values()), sum(c.certified for c in counts.values())
    report["certified"] = {name: {"values": c.values, "certified": c.certified, "right": c.right}
                           for name, c in counts.items()}  # fmt: skip
    report["coverage"] = certified / values if values else None
    report["certified_precision"] = sum(c.right for c in counts.values()) / certified if certified else None
    return report, gold_rows


def _gold_hash(golds: list[GoldRecord]) -> str:
    """One hash for the gold records scored (ids, texts, answers): a calibration names its evidence."""
    rows = [[g.id, g.text, g.gold, g.meta] for g in golds]
    return hashlib.sha256(json.dumps(rows, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _calibrate(session: Session, key: CalibrationKey, run_id: int, golds: list[GoldRecord], schema: Schema,
               rows: list[GoldRow], target: float) -> tuple[Calibration, dict[str, Any]]:  # fmt: skip
    """Fit the score and certify each field on these gold rows; store the calibration under `key`."""
    targets = {name: t if t != TARGET else target for name, t in field_targets(schema).items()}
    found = calibrate(schema, rows, targets, LEVEL)
    row = store_calibration(session, key, found, target, gold_hash=_gold_hash(golds), gold_size=len(golds),
                            run_id=run_id)  # fmt: skip
    values = sum(c.values for c in found.claims.values())
    return row, {"id": row.id, "fields": {name: c.sentence() for name, c in found.claims.items()},
                 "rows": found.row_sentence(target),
                 "covered": f"{row.values_kept} of {values} gold values kept as certified"}  # fmt: skip


def _verify(session: Session, run_id: int, schema: Schema, rows: list[GoldRow], report: dict[str, Any]
            ) -> dict[str, Any]:  # fmt: skip
    """Whether the calibration this run applied (as any run would) held on these gold records."""
    run = session.get(Run, run_id)
    applied = (run.confidence if run else None) or {}
    claims = field_claims(field_counts(schema, rows), applied)
    ok = report["ok"]
    ok_right = round((report["precision_ok"] or 0.0) * ok)
    rows_claim = check("rows ok", ok_right, ok, applied.get("target", TARGET), applied.get("level", LEVEL))
    found = verify_claims(claims, rows_claim)
    return found | {"applied": statement(applied) if applied else "no calibration applied"}


def _export_name(key: CalibrationKey) -> str:
    """The file name of a key's calibration. Every part is cleaned (a schema's title is the user's:
    "../../evil" would climb out of the folder): letters, digits, `-`, `_` and inner dots only."""
    parts = (key.schema_name, f"v{key.schema_version}", key.model, key.engine, key.mode)
    cleaned = ("".join(c if c.isalnum() or c in "-_." else "-" for c in part).strip(".-") for part in parts)
    return "-".join(part or "_" for part in cleaned) + ".json"


def _export_path(folder: Path, key: CalibrationKey) -> Path:
    """Where `--export` writes a key's calibration; refused if it resolves outside `folder` (a link)."""
    path = (folder / _export_name(key)).resolve()
    if path.parent != folder.resolve():
        raise ValueError(f"--export: {folder / _export_name(key)} resolves to {path}, outside {folder}")
    return path


def _publish(reports: dict[str, dict[str, Any]], title: str) -> None:
    """The tables as Prefect artifacts: one row per mode, and the confusion tables in markdown."""
    table = [
        {"mode": mode, **{o: r["outcomes"][o] for o in OUTCOMES}, "share_ok": round(r["share_ok"], 3),
         "precision_ok": None if r["precision_ok"] is None else round(r["precision_ok"], 3),
         **{f"acc_{k}": round(v, 3) for k, v in r["field_accuracy"].items()},
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


def _checked(target: float, calibrate: bool, verify: bool, export: str | None) -> None:
    if not MIN_TARGET <= target <= MAX_TARGET:
        raise ValueError(f"target {target:g} is outside {MIN_TARGET:g} to {MAX_TARGET:g}: a calibration "
                         "certifies a precision of ok worth having, one gold records can reach")  # fmt: skip
    if calibrate and verify:
        raise ValueError("use --calibrate on one half and --verify on the other, not both at once")
    if export and not calibrate:
        raise ValueError("--export writes the calibration --calibrate stores: add --calibrate")


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
) -> dict[str, dict[str, Any]]:
    """Score each mode on the gold records of `gold` (files, comma-separated; of one `half`, if given);
    return mode -> scores (with `run_id` and `eval_id`).

    Without `calibrate` each mode runs as production would, its matching calibration applied; `verify`
    then says whether that calibration's guarantee held on these records. With `calibrate`, no
    confidence bound applies (each row's least confidence is what is measured), and a calibration per
    mode is chosen for `target`, stored under that mode's full key, and written into the folder
    `export` as a file to ship, if given. Calibrating and verifying need a gold that names every field."""
    _checked(target, calibrate, verify, export)
    settings = Settings()
    modes = modes or [settings.mode]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown mode {', '.join(unknown)}: use {', '.join(MODES)}")
    chosen = load_checked_schema(schema)
    files = [Path(g).resolve() for g in gold.split(",")]
    golds = load_gold(files, chosen, limit, complete=calibrate or verify, half=half)
    sessions = session_factory(db_url or settings.db_url)
    batch, reports = uuid.uuid4().hex[:12], {}
    with checked_engines(settings, chosen) as engines:
        for mode in modes:
            source = f"eval:{','.join(map(str, files))}#{mode}"
            with sessions() as session:
                ids = store_records(session, source, (InputRecord(g.id, g.text, g.meta) for g in golds))
            production = settings.model_copy(update={"mode": mode})
            key = calibration_key(production, chosen, engines)
            context = new_context(sessions, production, chosen, engines, flow="evaluate", source=source,
                                  redo=True, measuring=calibrate)  # fmt: skip
            run_chunks(context, chunked(ids, settings.chunk_size))
            with sessions() as session:
                report, rows = _score_run(session, chosen, context.run_id, golds, source)
                report |= _costs(session, context.run_id, len(golds), mode)
                report["half"] = half
                if calibrate:
                    row, report["calibrated"] = _calibrate(session, key, context.run_id, golds, chosen, rows,
                                                           target)  # fmt: skip
                    if export:
                        folder = Path(export)
                        folder.mkdir(parents=True, exist_ok=True)
                        report["calibrated"]["exported"] = str(
                            export_calibration(row, _export_path(folder, key))
                        )
                if verify:
                    report["verified"] = _verify(session, context.run_id, chosen, rows, report)
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
