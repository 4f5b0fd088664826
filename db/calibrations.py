"""Which confidence bounds a run applies: the newest matching calibration, else a conservative default.

A calibration (tasks.evaluation.calibration) holds for one schema body, one formatting model and one
engine kind: the same model in bf16 on vLLM is surer of its wrong labels than its Q4 copy in-process.
So a run looks up exactly that match. Without one, nothing vouches for any threshold, and the default
is conservative: every value needs `UNCALIBRATED_VALUES` probability, and an enum or boolean passes at
no probability at all (a small model answered the first of seven labels for 30 of 30 comments, at
0.42 to 0.88), until `formwork eval --calibrate` measures one. A field's own `x-min-confidence` still
overrides both: the schema's author calibrated it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.models import Calibration
from formwork.schemas.registry import Schema

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
    applied: dict[str, Any]  # stored on the run: calibration id, threshold, guarantee, or the default


def find_calibration(session: Session, schema: Schema, model: str, engine: str) -> Calibration | None:
    return session.scalar(
        select(Calibration)
        .where(Calibration.schema_name == schema.name, Calibration.schema_version == schema.version,
               Calibration.schema_hash == schema.digest, Calibration.model == model,
               Calibration.engine == engine)
        .order_by(Calibration.id.desc())
        .limit(1)
    )  # fmt: skip


def bounds_for(session: Session, schema: Schema, model: str, engine: str, floor: float = 0.0) -> Bounds:
    """The bounds of a run of `schema` on `model` / `engine`; `floor` is the run's own `min_confidence`,
    which may only raise them."""
    found = find_calibration(session, schema, model, engine)
    if found is not None and found.threshold is not None:
        threshold = max(found.threshold, floor)
        guarantee = (f"precision of ok >= {found.bound:.3f} at {found.level:.0%} confidence on "
                     f"{found.gold_size} gold records (target {found.target:.0%}); "
                     f"{_kept_values(found)}")  # fmt: skip
        applied = {"calibration": found.id, "threshold": threshold, "guarantee": guarantee}
        return Bounds(threshold, threshold, applied)
    why = "no calibration for this schema, model and engine"
    if found is not None:
        why = f"calibration {found.id} reached no threshold (best lower bound {found.bound:.3f})"
    values = max(UNCALIBRATED_VALUES, floor)
    applied = {"calibration": None, "threshold": values, "guarantee": f"none: {why}; conservative default, "
               f"every value needs p >= {values:g} and no enum or boolean passes"}  # fmt: skip
    return Bounds(values, NEVER, applied)


def _kept_values(found: Calibration) -> str:
    if found.values_bound is None:
        claim = "not measured" if found.values_kept is None else "none kept on the gold records"
        return f"values kept in partial rows: no bound ({claim})"
    right = f"{found.values_correct}/{found.values_kept}"
    return f"values kept in partial rows >= {found.values_bound:.3f} ({right})"
