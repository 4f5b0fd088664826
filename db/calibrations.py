"""Which confidence bounds a run applies: one lookup for every entry point (run, retry, API, eval).

A calibration (tasks.evaluation.calibration) holds for one key (tasks.evaluation.key: schema body,
formatting model and its file, engine kind, mode, grounded decoding, reasoning model), so a run looks
up exactly that match, in this order: the newest matching calibration in its database (made on the
user's own gold, so it overrides the rest), else a calibration shipped with the package for that key,
else the conservative default. Without a calibration nothing vouches for any threshold, so no row is
`ok` (`Bounds.vouched`): every value needs `UNCALIBRATED_VALUES` probability to be kept in a `partial`
row, and an enum or boolean passes at no probability at all (a small model answered the first of seven
labels for 30 of 30 comments, at 0.42 to 0.88). A probability alone vouches for no row: with
Qwen2.5-Coder-1.5B on the contact gold, 59% of the rows with every value at p >= 0.99 were wrong.
A calibration that never measured the values partial rows keep (made before migration 0008, or none
kept on its gold) lowers the bound of rows, not of values: every value still needs
`UNCALIBRATED_VALUES`, the enum and boolean choices its threshold. A calibration from before
migration 0009 names neither the model file nor grounded decoding nor the reasoning model: it matches
no run, and the summary says so. A field's own `x-min-confidence` still overrides all of these: the
schema's author calibrated it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.models import Calibration
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.evaluation.key import CalibrationKey
from formwork.tasks.evaluation.shipped import FIELDS, find_shipped

# Quotes, numbers and dates: backed by the text already, and held high. Under grounded decoding each
# is a choice among the text's candidates, and a small model is often sure of the wrong one: on the
# expense gold set (two-pass) partial rows kept 152 of 159 values right at 0.9 and 111 of 112 at 0.99,
# on contact 30 of 35 and 2 of 2 (BENCHMARKS section 17). No bound makes a confident model right: the
# bundled one chose "2" of "2 nights" as a total at p 0.99. A calibration is how a run earns a lower one.
UNCALIBRATED_VALUES = 0.99
NEVER = 1.01  # a bound no probability meets: uncalibrated enum and boolean values


@dataclass(frozen=True)
class Bounds:
    """What a run holds its values to, and the sentence its summary shows."""

    values: float
    choices: float
    applied: dict[str, Any]  # stored on the run: calibration id (or shipped file), threshold, guarantee

    @property
    def vouched(self) -> bool:
        """Whether a calibration covers the run; without one no row is `ok`."""
        return self.applied.get("calibration") is not None

    def applied_to(self, options: ExtractOptions) -> ExtractOptions:
        """`options` holding every value to these bounds, and rows to `partial` where none vouches."""
        return replace(options, min_confidence=self.values, choice_confidence=self.choices,
                       ok_vouched=self.vouched)  # fmt: skip


def _matching(key: CalibrationKey) -> list[Any]:
    model_hash = (Calibration.model_hash.is_(None) if key.model_hash is None
                  else Calibration.model_hash == key.model_hash)  # fmt: skip
    return [Calibration.schema_name == key.schema_name, Calibration.schema_version == key.schema_version,
            Calibration.schema_hash == key.schema_hash, Calibration.model == key.model, model_hash,
            Calibration.engine == key.engine, Calibration.mode == key.mode,
            Calibration.grounded == key.grounded,
            Calibration.reasoning_model == key.reasoning_model]  # fmt: skip


def find_calibration(session: Session, key: CalibrationKey) -> Calibration | None:
    """The newest calibration in the database made for exactly `key`."""
    return session.scalar(select(Calibration).where(*_matching(key)).order_by(Calibration.id.desc()).limit(1))


def _stale(session: Session, key: CalibrationKey) -> Calibration | None:
    """The newest calibration of this schema body, model and engine made before migration 0009."""
    return session.scalar(
        select(Calibration)
        .where(Calibration.schema_hash == key.schema_hash, Calibration.model == key.model,
               Calibration.engine == key.engine, Calibration.grounded.is_(None))
        .order_by(Calibration.id.desc()).limit(1)
    )  # fmt: skip


def shipped_row(data: dict[str, Any]) -> Calibration:
    """A shipped calibration as an unsaved row, so a run reads it like one of its own."""
    fields = {name: data[name] for name in FIELDS if name != "measured"}
    return Calibration(**data["key"], **fields, created_at=date.fromisoformat(data["measured"][:10]))


def bounds_for(session: Session | None, key: CalibrationKey, floor: float = 0.0) -> Bounds:
    """The bounds of a run with `key`: its database's calibration, else a shipped one, else the default.
    `session` None: no database configured. `floor` is the run's own `min_confidence`, which may only
    raise them."""
    found = find_calibration(session, key) if session is not None else None
    label: int | str | None = found.id if found is not None else None
    if found is None and (shipped := find_shipped(key)) is not None:
        # the summary reads "calibration <label>"
        found, label = shipped_row(shipped), f"shipped in {shipped['file']}"
    if found is not None and found.threshold is not None:
        return _calibrated(found, label, floor)
    why = f"no calibration for {key.describe()}"
    if found is not None:
        why = f"calibration {label} reached no threshold (best lower bound {found.bound:.3f})"
    elif session is not None and (stale := _stale(session, key)) is not None:
        why = (f"calibration {stale.id} was made before calibrations named the model file, grounded "
               f"decoding and the reasoning model, so it no longer applies (run formwork eval --calibrate "
               f"again); {why}")  # fmt: skip
    values = max(UNCALIBRATED_VALUES, floor)
    guarantee = (f"none: {why}; so no row is ok, and values with p >= {values:g} are kept in partial "
                 "rows unchecked (no enum or boolean passes)")  # fmt: skip
    applied = {"calibration": None, "threshold": values, "guarantee": guarantee}
    return Bounds(values, NEVER, applied)


def statement(applied: dict[str, Any]) -> str:
    """The one sentence a run's summary shows (as db.queries.run_summary words it)."""
    which = f"calibration {applied['calibration']}" if applied.get("calibration") else "uncalibrated"
    return f"{which}, p >= {applied['threshold']:g}: {applied['guarantee']}"


def _calibrated(found: Calibration, label: int | str | None, floor: float) -> Bounds:
    """A calibration's bounds; its sentence says what `ok` then means, in words."""
    threshold = max(float(found.threshold or 0.0), floor)
    values = threshold if found.values_bound is not None else max(UNCALIBRATED_VALUES, threshold)
    when = f", measured {found.created_at:%Y-%m-%d}" if found.created_at else ""
    guarantee = (f"precision of ok >= {found.bound:.3f} at {found.level:.0%} confidence on "
                 f"{found.gold_size} gold records (target {found.target:.0%}{when}): at least "
                 f"{found.bound:.1%} of ok rows have every field right, for records like those; "
                 f"{_kept_values(found, values)}")  # fmt: skip
    applied = {"calibration": label, "threshold": values, "choices": threshold, "target": found.target,
               "level": found.level, "guarantee": guarantee}  # fmt: skip
    return Bounds(values, threshold, applied)


def _kept_values(found: Calibration, values: float) -> str:
    if found.values_bound is None:
        claim = "not measured" if found.values_kept is None else "none kept on the gold records"
        return f"values kept in partial rows: no bound ({claim}), so each still needs p >= {values:g}"
    right = f"{found.values_correct}/{found.values_kept}"
    return f"values kept in partial rows >= {found.values_bound:.3f} ({right})"


def shipped_data(row: Calibration) -> dict[str, Any]:
    """A stored calibration as a shipped file's content (tasks.evaluation.shipped)."""
    if row.grounded is None or row.reasoning_model is None:
        raise ValueError(f"calibration {row.id} was made before migration 0009: it has no full key to ship")
    key = CalibrationKey(row.schema_name, row.schema_version, row.schema_hash, row.model, row.model_hash,
                         row.engine, row.mode, row.grounded, row.reasoning_model)  # fmt: skip
    fields = {name: getattr(row, name) for name in FIELDS if name != "measured"}
    return {"key": key.as_dict(), **fields, "measured": row.created_at.date().isoformat()}


def export_calibration(row: Calibration, path: Path) -> Path:
    """Write `row` as a shipped calibration file at `path` (for tasks/evaluation/shipped/)."""
    path.write_text(json.dumps(shipped_data(row), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
