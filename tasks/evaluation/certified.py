"""What a run kept as certified, scored against gold: per field, how many values it certified (its
coverage) and how many of those are right (its precision), the two numbers we steer by.

Read from the rows' `trust` (tasks.decide): every value path of every row, with the value of the
reading kept there and whether it was certified. A field a row holds no usable value for counts as one
value not certified. Where a field repeats in a record (list items) the record is its unit, as in
calibration (tasks.confidence.certify.trials): one value, certified where any item is, right only if
every certified item is (items of one receipt are wrong together, not independently).

Verification (tasks.evaluation.verification) then puts an interval around each claim's precision at the
level the calibration made it at (its share of the tests that could pass, stored with the run's
calibration as `levels`), and checks a pooled claim (`pools`) as one claim over its fields together.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


def tally(fields: Sequence[str], seen: Iterable[tuple[str, str, bool, bool]]) -> dict[str, FieldCount]:
    """Per field: values, certified and certified right, from each value's (field, record, certified,
    right). A list field's (`[]` in its name) unit is its record: one value, certified where any of
    its items is, right only if every certified item is (tasks.confidence.certify.trials)."""
    counts = {name: FieldCount() for name in fields}
    units: dict[tuple[str, str], tuple[bool, bool]] = {}
    alone: list[tuple[str, bool, bool]] = []
    for field, record, certified, right in seen:
        if unit_of(field) == "value":
            alone.append((field, certified, right))
            continue
        was_certified, was_right = units.get((field, record), (False, True))
        units[(field, record)] = (was_certified or certified, was_right and (right or not certified))
    for field, certified, right in alone + [(field, *unit) for (field, _), unit in units.items()]:
        count = counts.setdefault(field, FieldCount())
        count.values += 1
        count.certified += certified
        count.right += certified and right
    return counts


def field_counts(schema: Schema, rows: Sequence[GoldRow]) -> dict[str, FieldCount]:
    """Per field of the schema: values (records, for a list field), certified, and certified right."""
    fields = schema_fields(schema.checked_body)
    seen: list[tuple[str, str, bool, bool]] = []
    for row in rows:
        held = {entry["field"] for entry in row.trust}
        # no reading held a value the row could keep: one value, not certified
        seen += [(name, row.record, False, False) for name in fields if name not in held and "[]" not in name]
        for entry in row.trust:
            certified = bool(entry.get("certified"))
            node = node_at(schema.checked_body, parse_path(entry["path"])) or {}
            right = certified and compare(node, gold_at(row.gold, entry["path"]), kept_value(entry),
                                          entry["path"])  # fmt: skip
            seen.append((entry["field"], row.record, certified, right))
    return tally(fields, seen)


def field_claims(counts: dict[str, FieldCount], applied: dict[str, Any]) -> list[Claim]:
    """The calibration's claims checked on these counts, each as it was made: a field's own claim, or a
    pooled claim once over its fields' counts together (named "pooled over ..."), at the level the run's
    calibration certified it at (`levels`); a run stored without levels split it over every field, as
    every calibration then did."""
    split = field_level(applied.get("level", 0.9), len(counts))
    levels, pools = applied.get("levels") or {}, applied.get("pools") or {}
    targets, target = applied.get("targets") or {}, applied.get("target", TARGET)
    claims, done = [], set()
    for name in counts:
        if name in done:
            continue
        pool = tuple(pools.get(name) or ())
        done |= {name, *pool}
        said, unit = (f"pooled over {', '.join(pool)}", "value") if pool else (name, unit_of(name))
        together = [counts.get(field, FieldCount()) for field in pool or (name,)]
        claims.append(check(said, sum(c.right for c in together), sum(c.certified for c in together),
                            targets.get(name, target), levels.get(name, split),
                            sum(c.values for c in together), pool, unit))  # fmt: skip
    return claims


def unit_of(field: str) -> str:
    """What a field's counts are: records where it repeats in a record (list items), else values."""
    return "record" if "[]" in field else "value"
