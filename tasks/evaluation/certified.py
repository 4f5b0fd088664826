"""What a run kept as certified, scored against gold: per field, how many values it certified (its
coverage) and how many of those are right (its precision), the two numbers we steer by.

Read from the rows' `trust` (tasks.decide): every value path of every row, with the value of the
reading kept there and whether it was certified. A field a row holds no usable value for counts as one
value not certified. Verification (tasks.evaluation.verification) then puts an interval around each
certified field's precision, at the level that field's claim was made at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from formwork.schemas.paths import node_at, parse_path
from formwork.schemas.registry import Schema
from formwork.tasks.confidence.certify import TARGET, field_level
from formwork.tasks.evaluation.calibration import GoldRow, gold_at, schema_fields
from formwork.tasks.evaluation.scoring import compare
from formwork.tasks.evaluation.verification import Claim, check


@dataclass
class FieldCount:
    """One field over a set of rows: values seen, values certified, and certified values right."""

    values: int = 0
    certified: int = 0
    right: int = 0

    @property
    def coverage(self) -> float | None:
        return self.certified / self.values if self.values else None

    @property
    def precision(self) -> float | None:
        return self.right / self.certified if self.certified else None


def kept_value(entry: dict[str, Any]) -> Any:
    """The value the row kept at a trust entry's path (the kept reading's)."""
    readings = entry.get("readings") or {}
    kept = readings.get(entry.get("reading")) or {}
    return kept.get("value")


def field_counts(schema: Schema, rows: Sequence[GoldRow]) -> dict[str, FieldCount]:
    """Per field of the schema: values, certified, and certified right, over `rows`."""
    fields = schema_fields(schema.checked_body)
    counts = {name: FieldCount() for name in fields}
    for row in rows:
        seen = {entry["field"] for entry in row.trust}
        for name in fields:
            if name not in seen and "[]" not in name:
                counts[name].values += 1  # no reading held a value the row could keep
        for entry in row.trust:
            count = counts.setdefault(entry["field"], FieldCount())
            count.values += 1
            if entry.get("certified"):
                node = node_at(schema.checked_body, parse_path(entry["path"])) or {}
                count.certified += 1
                count.right += compare(
                    node, gold_at(row.gold, entry["path"]), kept_value(entry), entry["path"]
                )
    return counts


def field_claims(counts: dict[str, FieldCount], applied: dict[str, Any]) -> list[Claim]:
    """Each field's certified precision as a claim checked at the level the run's calibration made it."""
    level = field_level(applied.get("level", 0.9), len(counts))
    targets, target = applied.get("targets") or {}, applied.get("target", TARGET)
    return [check(name, c.right, c.certified, targets.get(name, target), level, c.values)
            for name, c in counts.items()]  # fmt: skip
