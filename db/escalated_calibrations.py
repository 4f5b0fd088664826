"""The stronger reader's calibration measured on the records a first reader escalates to it (issue 52).

A cascade sends the stronger reader only the records the first reader left unsure, the hard ones, where
a calibration measured on all records overstates its precision (tasks.escalation). A calibration
measured on those records alone (`formwork eval --calibrate --escalated-from RUN`) speaks for them, and
only while the same first reader with the same calibration chooses them: another first reader, or the
same one under another calibration, escalates other records. So it is stored with `escalated_from`, the
first reader and a digest of its calibration (`first_identity`), and is looked up for exactly that
(`escalated_policy`); the ordinary lookup (db.calibrations) never returns it, so it never certifies a
reader's own runs either.

At run time the first reader's calibration is the one its run applied (`runs.confidence`, by its id or
shipped file), found again from the row the escalation adds to (`first_readers`, the row
db.queries.earlier_rows returns): a calibration deleted since matches nothing, and the escalated values
stay unsure, as they do where no such calibration exists.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.calibrations import KEY_FIELDS, METHOD, Applied, calibrated_policy, shipped_row
from formwork.db.models import Calibration, Result, Run
from formwork.tasks.escalation import joint_level
from formwork.tasks.evaluation.key import CalibrationKey
from formwork.tasks.evaluation.shipped import find_shipped

CONTENT = ("fields", "score_model", "target", "level", "gold_hash", "gold_size")


@dataclass(frozen=True)
class FirstReader:
    """The first reader of an escalated record and its calibration (`identity`), at its `level`."""

    identity: str
    level: float


def first_identity(row: Calibration) -> str:
    """The first reader (NAME@MODE) and a digest of its calibration: its whole key and what it certifies
    (score model, claims, target, level, gold), so that a calibration measured on what it escalates can
    apply to nothing else. The same for a stored row and a shipped one read as a row (shipped_row)."""
    content = {"key": {name: getattr(row, name) for name in KEY_FIELDS},
               **{name: getattr(row, name) for name in CONTENT}}  # fmt: skip
    digest = hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return f"{row.model}@{row.mode}:{digest}"


def applied_calibration(session: Session, applied: dict[str, Any] | None) -> Calibration | None:
    """The calibration a run applied (its `confidence`: a stored id, or a shipped file for its key);
    None where it applied none, or the stored one is gone."""
    label, key = (applied or {}).get("calibration"), (applied or {}).get("key")
    if label is None or key is None:
        return None
    if isinstance(label, int):
        return session.get(Calibration, label)
    shipped = find_shipped(CalibrationKey(**key))
    return shipped_row(shipped) if shipped is not None else None


def first_readers(session: Session, record_ids: list[int], schema_name: str, version: int
                  ) -> dict[int, FirstReader | None]:  # fmt: skip
    """Per record, the reader and calibration of its latest stored row (the row an escalation adds to:
    db.queries.earlier_rows chooses it the same way); None where that run applied no calibration."""
    found = session.execute(
        select(Result.record_id, Run.id, Run.confidence)
        .join(Run, Run.id == Result.run_id)
        .where(Result.record_id.in_(record_ids), Result.schema_name == schema_name,
               Result.schema_version == version)
        .order_by(Result.updated_at, Result.id)  # the latest of each record last: it wins below
    ).all()  # fmt: skip
    by_run: dict[int, FirstReader | None] = {}
    readers: dict[int, FirstReader | None] = {}
    for record, run, applied in found:
        if run not in by_run:
            row = applied_calibration(session, applied)
            by_run[run] = FirstReader(first_identity(row), row.level) if row is not None else None
        readers[record] = by_run[run]
    return readers


def escalation_reach(session: Session, key: CalibrationKey | None, applied: dict[str, Any] | None,
                     own: tuple[str, ...] | None) -> tuple[str, ...] | None:  # fmt: skip
    """The fields an escalation to the reader with `key` is sent for, from a run that applied `applied`:
    where a calibration of that reader measured on this first reader's escalations exists, None (every
    row the first reader leaves unsure, the records that calibration was measured on, so it speaks for
    exactly those); else `own`, the fields that reader's all-records calibration certifies."""
    if key is None or (first := applied_calibration(session, applied)) is None:
        return own
    return None if find_escalated(session, key, first_identity(first)) is not None else own


def find_escalated(session: Session, key: CalibrationKey, first: str) -> Calibration | None:
    """The newest calibration of the reader with `key` measured on the records `first` escalates."""
    columns = {name: getattr(Calibration, name) for name in KEY_FIELDS}
    return session.scalar(
        select(Calibration)
        .where(*(column.is_(None) if getattr(key, name) is None else column == getattr(key, name)
                 for name, column in columns.items()),
               Calibration.method == METHOD, Calibration.escalated_from == first)
        .order_by(Calibration.id.desc()).limit(1)
    )  # fmt: skip


def escalated_policy(session: Session, key: CalibrationKey, first: FirstReader) -> Applied | None:
    """The policy the stronger reader with `key` holds escalations from `first` to, where a calibration
    measured on them exists; its guarantee says on what it was measured and the cascade's joint level."""
    row = find_escalated(session, key, first.identity)
    if row is None:
        return None
    found = calibrated_policy(row, row.id)
    joint = joint_level(first.level, row.level)
    said = (f"{found.applied['guarantee']}; measured on the records {first.identity} escalates, so it "
            f"certifies only those; an escalated row's claims, resting on both calibrations, hold together "
            f"at {joint:.0%}")  # fmt: skip
    applied = found.applied | {"guarantee": said, "escalated_from": first.identity, "joint_level": joint,
                               "key": key.as_dict()}  # fmt: skip
    return Applied(found.policy, applied)


def escalated_run_policy(session: Session, run_id: int, first: FirstReader | None) -> Applied | None:
    """The policy of the escalation run `run_id` (its reader's key as the run stored it) for records
    `first` escalated, where a calibration measured on them exists; stored on the run as what it holds
    its values to (flushed, not committed). None: its values stay unsure (tasks.escalation)."""
    run = session.get(Run, run_id)
    key = (run.confidence or {}).get("key") if run is not None else None
    if first is None or key is None or run is None:
        return None
    found = escalated_policy(session, CalibrationKey(**key), first)
    if found is not None:
        run.confidence = found.applied
        session.flush()
    return found
