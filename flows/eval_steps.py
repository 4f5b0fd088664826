"""The steps `formwork eval` takes with a run's rows, once they are stored: score them against the gold,
count what they cost, fit and store a calibration from them, verify one on them, export one to ship.

The same steps serve a run the eval has just made and one it measured before (`--from-run`, flows.
evaluate): a record's readings do not depend on the calibration applied, so a measured run's rows can
be decided again offline (tasks.evaluation.replay).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from formwork.db.calibration_store import export_calibration, store_calibration
from formwork.db.models import ModelCall, Run, RunResult
from formwork.db.queries import result_rows
from formwork.flows.delivered import every_value, top_fields
from formwork.schemas.paths import parse_path, path_text, values_with_nodes
from formwork.schemas.registry import Schema
from formwork.tasks.confidence.certify import LEVEL, TARGET
from formwork.tasks.evaluation.calibration import GoldRow, calibrate, field_targets, pooled_fields
from formwork.tasks.evaluation.certified import FieldCount, field_claims, field_counts
from formwork.tasks.evaluation.gold import GoldRecord
from formwork.tasks.evaluation.key import CalibrationKey
from formwork.tasks.evaluation.replay import reading_alone
from formwork.tasks.evaluation.scoring import RecordScore, score_record, summarise
from formwork.tasks.evaluation.verification import check
from formwork.tasks.evaluation.verification import verify as verify_claims


def costs(session: Session, run_id: int, reading: str | None = None) -> dict[str, Any]:
    """What the run's calls cost a record of the run (its calls and wall time over the records it read,
    however few of them a replay scores); with `reading`, only the calls of that reading."""
    calls = [
        call for call in session.execute(
            select(ModelCall.prompt_tokens, ModelCall.completion_tokens, ModelCall.duration_s,
                   ModelCall.parse_step, ModelCall.judged).where(ModelCall.run_id == run_id)
        ) if reading is None or (call.judged or {}).get("reading") == reading
    ]  # fmt: skip
    run = session.get(Run, run_id)
    wall = (run.finished_at - run.started_at).total_seconds() if run and run.finished_at else 0.0
    steps = Counter(c.parse_step for c in calls if c.parse_step)
    n = max(session.scalar(select(func.count()).where(RunResult.run_id == run_id)) or 0, 1)
    return {
        "calls": len(calls),
        "prompt_tokens_per_record": sum(c.prompt_tokens for c in calls) / n,
        "completion_tokens_per_record": sum(c.completion_tokens for c in calls) / n,
        "model_seconds_per_record": sum(c.duration_s for c in calls) / n,
        "wall_seconds_per_record": wall / n,
        "parse_steps": dict(steps),
    }


def score_run(session: Session, schema: Schema, run_id: int, golds: list[GoldRecord], source: str,
              reading: str | None = None) -> tuple[dict[str, Any], list[GoldRow]]:  # fmt: skip
    """The run's report (outcomes, per-field accuracy, what it certified per field) and its rows as
    calibration and verification read them; with `reading`, the rows hold that reading alone
    (tasks.evaluation.replay.reading_alone), while outcomes and accuracy stay the run's own rows.

    Accuracy is given twice per field: `field_accuracy` (and `stated_accuracy`) of the values the row
    kept (its `data`: certified ones, or what the judge kept with calibration off), and `read_accuracy`
    (and `read_stated_accuracy`) of the values the user is handed (flows.delivered.every_value: every
    state but `refused`, which counts as null). The outcomes are scored on the delivered values too:
    tasks.decide nulls a value dropped as unsure and lists it in `nulled`, so on the kept values alone
    a row whose only gap is unsure values was a "schema mismatch", though the model's JSON validated and
    the user gets those values. A nulled path counts as a mismatch only where the delivered row still
    has no value (the judge refused it); a failed or missing row keeps its own outcome (no JSON, or
    its data broke the schema) and delivers nulls."""
    rows = {row["record"]: row for row in result_rows(session, run_id) if row["source"] == source}
    kept = [score_record(schema, g.id, g.gold, *_kept(rows.get(g.id))) for g in golds]
    read = [delivered_score(schema, g, rows.get(g.id), score) for g, score in zip(golds, kept, strict=True)]
    report = summarise(schema, kept, [g.gold for g in golds]).as_dict()
    given = summarise(schema, read, [g.gold for g in golds])
    report |= {"outcomes": given.outcomes, "kept_outcomes": report["outcomes"],
               "read_accuracy": given.field_accuracy,
               "read_stated_accuracy": given.stated_accuracy}  # fmt: skip
    gold_rows = [GoldRow(g.id, (rows.get(g.id) or {}).get("trust") or [], g.gold) for g in golds]
    if reading is not None:
        gold_rows = [reading_alone(row, {reading}) for row in gold_rows]
    return report | certified_report(field_counts(schema, gold_rows)), gold_rows


def _kept(row: dict[str, Any] | None) -> tuple[str, dict[str, Any] | None, list[str]]:
    """A stored row's status, kept data and nulled paths as scoring reads them; a record the run did not
    store counts as no JSON. A failed row's data is scored as stored (results hides it: `unchecked`)."""
    if row is None:
        return "failed", None, []
    return row["status"], row["data"] if row["data"] is not None else row["unchecked"], row["nulled"] or []


def delivered_score(schema: Schema, gold: GoldRecord, row: dict[str, Any] | None, kept: RecordScore
                    ) -> RecordScore:  # fmt: skip
    """One record scored on what its user is handed (`row` as db.queries.result_rows gives it; None where
    the run stored none): every value with its state but `refused`, which is null. `kept` is its score on
    the kept values, whose outcome a failed or missing row keeps (see score_run)."""
    fields = top_fields(schema.body)
    found = every_value(fields, row) if row is not None else {}
    values = {f: None if f not in found or found[f].state == "refused" else found[f].value for f in fields}
    if row is None or row["status"] == "failed":
        return replace(kept, fields=score_record(schema, gold.id, gold.gold, kept.status, values).fields,
                       got=values)  # fmt: skip
    present = {path_text(path) for path, _, value in values_with_nodes(schema.checked_body, values)
               if value is not None}  # fmt: skip
    refused = [path for path in row["nulled"] or [] if path_text(parse_path(path)) not in present]
    return score_record(schema, gold.id, gold.gold, row["status"], values, refused)


def certified_report(counts: dict[str, FieldCount]) -> dict[str, Any]:
    """Per field: values, certified and certified right; with the coverage and precision over all."""
    report: dict[str, Any] = {}
    values, certified = sum(c.values for c in counts.values()), sum(c.certified for c in counts.values())
    report["certified"] = {name: {"values": c.values, "certified": c.certified, "right": c.right}
                           for name, c in counts.items()}  # fmt: skip
    report["coverage"] = certified / values if values else None
    report["certified_precision"] = sum(c.right for c in counts.values()) / certified if certified else None
    return report


def gold_hash(golds: list[GoldRecord]) -> str:
    """One hash for the gold records scored (ids, texts, answers): a calibration names its evidence."""
    rows = [[g.id, g.text, g.gold, g.meta] for g in golds]
    return hashlib.sha256(json.dumps(rows, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def calibrated(
    session: Session, key: CalibrationKey, run_id: int, golds: list[GoldRecord], schema: Schema,
    rows: list[GoldRow], target: float, export: str | None = None, claim: str = "per-field",
) -> dict[str, Any]:  # fmt: skip
    """Fit the score and certify each field on these gold rows (or the fields `claim` pools, together);
    store the calibration under `key`, and write it into the folder `export` as a file to ship, if given."""
    targets = {name: t if t != TARGET else target for name, t in field_targets(schema).items()}
    found = calibrate(schema, rows, targets, LEVEL, pooled_fields(schema, claim))
    row = store_calibration(session, key, found, target, gold_hash=gold_hash(golds), gold_size=len(golds),
                            run_id=run_id)  # fmt: skip
    values = sum(c.values for c in found.claims.values())
    said = {"id": row.id, "fields": {name: c.sentence() for name, c in found.claims.items()},
            "rows": found.row_sentence(target),
            "covered": f"{row.values_kept} of {values} gold values kept as certified"}  # fmt: skip
    if export:
        folder = Path(export)
        folder.mkdir(parents=True, exist_ok=True)
        said["exported"] = str(export_calibration(row, export_path(folder, key)))
    return said


def verified(counts: dict[str, FieldCount], ok: int, ok_right: int, applied: dict[str, Any],
             said: str) -> dict[str, Any]:  # fmt: skip
    """Whether these gold records confirm, break or do not contradict the calibration a run applied
    (`applied`, said as `said`): each field's certified values, and the `ok` rows measured beside."""
    rows_claim = check("rows ok", ok_right, ok, applied.get("target", TARGET), applied.get("level", LEVEL))
    return verify_claims(field_claims(counts, applied), rows_claim) | {"applied": said}


def export_name(key: CalibrationKey) -> str:
    """The file name of a key's calibration. Every part is cleaned (a schema's title is the user's:
    "../../evil" would climb out of the folder): letters, digits, `-`, `_` and inner dots only."""
    parts = (key.schema_name, f"v{key.schema_version}", key.model, key.engine, key.mode)
    cleaned = ("".join(c if c.isalnum() or c in "-_." else "-" for c in part).strip(".-") for part in parts)
    return "-".join(part or "_" for part in cleaned) + ".json"


def export_path(folder: Path, key: CalibrationKey) -> Path:
    """Where `--export` writes a key's calibration; refused if it resolves outside `folder` (a link)."""
    path = (folder / export_name(key)).resolve()
    if path.parent != folder.resolve():
        raise ValueError(f"--export: {folder / export_name(key)} resolves to {path}, outside {folder}")
    return path
