"""Storing, exporting, listing and removing calibrations (db.calibrations looks up the one a run applies).

eval (`formwork eval --calibrate`) and audits (`formwork audit calibrate`) store the same kind of row; a
stored one can be written out as a file shipped with the package (tasks.evaluation.shipped), or removed,
so that a run with its key applies the next one the lookup finds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.calibrations import KEY_FIELDS, METHOD
from formwork.db.models import Calibration
from formwork.tasks.confidence.certify import lower_bound
from formwork.tasks.evaluation.calibration import Calibrated
from formwork.tasks.evaluation.key import JUDGE_VERDICTS, CalibrationKey
from formwork.tasks.evaluation.shipped import FIELDS
from formwork.tasks.grounding.candidates import READERS_VERSION


def store_calibration(session: Session, key: CalibrationKey, found: Calibrated, target: float, *,
                      gold_hash: str, gold_size: int, run_id: int | None, source: str | None = None,
                      escalated_from: str | None = None) -> Calibration:  # fmt: skip
    """Store what `tasks.evaluation.calibration.calibrate` found, for `key` (flushed, not committed):
    eval's calibrations (`source` None: a gold set) and audits' (`AUDIT`) are the same kind of row.
    `escalated_from`: measured on the records that first reader escalates (db.escalated_calibrations),
    so it applies to those escalations only, never to the reader's own runs."""
    kept = [c for c in found.claims.values() if c.certified]
    pooled_kept, pooled_right = sum(c.kept for c in kept), sum(c.correct for c in kept)
    pooled = lower_bound(pooled_right, pooled_kept, found.level) if pooled_kept else None
    row = Calibration(**key.as_dict(), method=METHOD, threshold=None, target=target, level=found.level,
                      bound=found.row_bound, kept=found.ok_rows, correct=found.ok_right,
                      values_bound=pooled,
                      values_kept=pooled_kept, values_correct=pooled_right,
                      fields={name: claim.as_dict() for name, claim in found.claims.items()},
                      score_model=found.model.as_dict(), gold_hash=gold_hash, gold_size=gold_size,
                      run_id=run_id, source=source, escalated_from=escalated_from)  # fmt: skip
    session.add(row)
    session.flush()
    return row


def shipped_data(row: Calibration) -> dict[str, Any]:
    """A stored calibration as a shipped file's content (tasks.evaluation.shipped)."""
    if row.method != METHOD or row.pipeline is None:
        raise ValueError(f"calibration {row.id} is not a per-value calibration with a full key: not shipped")
    if row.escalated_from:  # a shipped file has no place for it, and would apply to every run of the reader
        raise ValueError(f"calibration {row.id} holds only for escalations from {row.escalated_from}: "
                         "not shipped")  # fmt: skip
    key = CalibrationKey(**{name: getattr(row, name) for name in KEY_FIELDS})
    fields = {name: getattr(row, name) for name in FIELDS if name != "measured"}
    # what it was measured with: a readers' bump re-keys it only where the judge's verdicts on its
    # schema's gold are unchanged (tasks.evaluation.key; tests/test_judge_version.py)
    measured_with = {"pipeline": key.pipeline, "judge": JUDGE_VERDICTS[READERS_VERSION].get(key.schema_name)}
    return {"key": key.as_dict(), **fields, "measured": row.created_at.date().isoformat(),
            "measured_with": measured_with}  # fmt: skip


def export_calibration(row: Calibration, path: Path) -> Path:
    """Write `row` as a shipped calibration file at `path` (for tasks/evaluation/shipped/)."""
    path.write_text(json.dumps(shipped_data(row), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


class CalibrationProblem(ValueError):
    """A calibration a command names cannot be removed: none has that id, or it ships with Formwork."""


def stored_calibrations(session: Session) -> list[Calibration]:
    """Every calibration stored in the database, oldest first."""
    return list(session.scalars(select(Calibration).order_by(Calibration.id)))


def remove_calibration(session: Session, ident: str) -> Calibration:
    """Delete the stored calibration `ident` names (flushed, not committed); a run with its key then
    applies the next newest for the key, else a shipped one, else the conservative default. A shipped
    calibration is data in the package: it is refused with what to do instead."""
    if ident.endswith(".json") or not ident.isdigit():
        raise CalibrationProblem(
            f"{ident} is not the id of a calibration stored in this database: a shipped calibration is part "
            "of Formwork and cannot be removed from a database; a calibration of your own for the same setup "
            "(`formwork audit calibrate` or `formwork eval --calibrate`) applies instead of it"
        )
    row = session.get(Calibration, int(ident))
    if row is None:
        raise CalibrationProblem(f"there is no calibration {ident} in this database (`formwork calibrations` "
                                 "lists them)")  # fmt: skip
    session.delete(row)
    session.flush()
    return row
