"""One stored row, measured with no bound, as the calibration's Point: what production would do with it
at each threshold (tasks.evaluation.calibration).

Calibration runs every record with no confidence bound, so each row's least confidence can be read
off; the Point then says, for any threshold, whether production would store the row `ok`, `partial`
(with which values), or fail it. A row that failed only its confidence bounds counts as ok at bound 0
(its least confidence decides where it drops out). A row with no JSON, or failed for any other reason
(a refused critical field, a pass cut at `length`), fails at every threshold, and its values are never
kept. A critical field's value below the threshold fails the row there too, so its values are not
counted as kept: only values of rows that are `partial` at a threshold are.
"""

from __future__ import annotations

from typing import Any

from formwork.schemas.registry import Schema
from formwork.tasks.evaluation.calibration import Point, field_confidence, least_confidence
from formwork.tasks.evaluation.scoring import RecordScore
from formwork.tasks.validate import only_guesses


def point_of(schema: Schema, score: RecordScore, data: dict[str, Any] | None, errors: list[str],
             evidence: list[dict[str, Any]] | None) -> Point:  # fmt: skip
    """The Point of one scored row (`score`) from what the run stored for it."""
    ok = score.status == "ok" or (only_guesses(errors) and data is not None)
    values = tuple((field_confidence(evidence, key), good) for key, good in score.fields.items()
                   if data is not None and data.get(key) is not None)  # fmt: skip
    failed = data is None or (score.status == "failed" and not ok)
    critical = [field_confidence(evidence, key) for key in schema.critical_fields]
    least_critical = min((c for c in critical if c is not None), default=None)
    return Point(ok, score.outcome == "all_correct", least_confidence(evidence), values, failed,
                 least_critical)  # fmt: skip
