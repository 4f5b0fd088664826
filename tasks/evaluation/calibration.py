"""Calibrate on gold: fit the score, and certify a threshold per field (tasks.confidence.certify).

`formwork eval --calibrate` runs the gold records while measuring (nothing certified, nothing dropped):
each stored row keeps, per value path, what every reading said (`trust`). From those rows and the gold:

1. every reading's value at every path becomes one example: its features (tasks.confidence.features)
   and whether it is right (the gold's value at that path, compared by the field's rule);
2. the score model (tasks.confidence.score) is fitted on all of them, and, for choosing thresholds,
   refitted once per fold without that fold's records, so each record is scored by a model that
   never saw it (cross-fitting);
3. each record's row is rebuilt as a run would build it (tasks.confidence.choose: each field from the
   reading whose least sure value scores highest, under the model that did not see the record), and
   each kept value is one trial of its field: its score and whether it is right; where a field repeats
   in a record (list items), the record is the trial, right only if every kept item is (items of one
   receipt are wrong together, not independently);
4. each field gets the lowest threshold that certifies its target (tasks.confidence.certify), the
   level split across the schema's fields that could pass; or the chosen fields make one pooled claim
   (`pooled`: "of the values kept in these fields, >= 95% are right"), one test.

The row's claim is measured beside: the rows a run would store `ok` at those thresholds (every value
certified) and how many are entirely right; it is certified only where there are enough such rows
to tell (`values_needed`), and otherwise says how many it would need.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from formwork.schemas.paths import node_at, parse_path
from formwork.schemas.registry import Schema
from formwork.tasks.confidence.certify import (
    LEVEL,
    TARGET,
    FieldClaim,
    Scored,
    certify,
    lower_bound,
    values_needed,
)
from formwork.tasks.confidence.choose import choose, top_key
from formwork.tasks.confidence.features import features
from formwork.tasks.confidence.policy import Judged
from formwork.tasks.confidence.readings import PathReading
from formwork.tasks.confidence.score import ScoreModel, fit, fold_models, fold_of
from formwork.tasks.evaluation.scoring import compare

TrustRows = list[dict[str, Any]]


@dataclass(frozen=True)
class GoldRow:
    """One gold record's stored row as measured: its id, its `trust` rows, and the gold answer."""

    record: str
    trust: TrustRows
    gold: dict[str, Any]


@dataclass(frozen=True)
class Calibrated:
    """What a calibration found: the score model, each field's claim, and the rows' measured claim."""

    model: ScoreModel
    claims: dict[str, FieldClaim]
    ok_rows: int
    ok_right: int
    level: float

    @property
    def row_bound(self) -> float:
        return lower_bound(self.ok_right, self.ok_rows, self.level)

    def row_sentence(self, target: float) -> str:
        needed = values_needed(target, self.level)
        shown = f"{self.ok_right}/{self.ok_rows} ok rows entirely right"
        if self.ok_rows < needed:
            return (f"rows: {shown}; not certified ({needed} ok rows all right would be needed to certify "
                    f"{target:.0%} at {self.level:.0%})")  # fmt: skip
        verdict = "certified" if self.row_bound >= target else "not certified"
        return f"rows: {shown}, lower bound {self.row_bound:.3f}: {verdict} at {target:.0%}"


def schema_fields(body: Any, path: str = "") -> list[str]:
    """Every field that holds values, as a path without item indices (`items[].amount`)."""
    if not isinstance(body, dict):
        return [path] if path else []
    if isinstance(body.get("properties"), dict):
        return [f for key, node in body["properties"].items()
                for f in schema_fields(node, f"{path}.{key}" if path else key)]  # fmt: skip
    if isinstance(body.get("items"), dict):
        return schema_fields(body["items"], f"{path}[]")
    return [path] if path else []


def gold_at(gold: Any, path: str) -> Any:
    for part in parse_path(path):
        if isinstance(part, int):
            gold = gold[part] if isinstance(gold, list) and part < len(gold) else None
        else:
            gold = gold.get(part) if isinstance(gold, dict) else None
    return gold


def _paths(row: dict[str, Any]) -> dict[str, PathReading]:
    return {name: PathReading.from_dict(found) for name, found in row["readings"].items()}


def examples(schema: Schema, rows: Sequence[GoldRow]) -> tuple[list[dict[str, float]], list[bool], list[str]]:
    """(features, right, record) of every reading's usable value at every stored path."""
    found: tuple[list[dict[str, float]], list[bool], list[str]] = ([], [], [])
    for row in rows:
        for entry in row.trust:
            node = node_at(schema.checked_body, parse_path(entry["path"])) or {}
            right_value = gold_at(row.gold, entry["path"])
            readings = _paths(entry)
            for name, mine in readings.items():
                if not mine.usable:
                    continue
                other = next((r for n, r in readings.items() if n != name), None)
                found[0].append(
                    features(entry["field"], name, mine, other, entry["offered"], entry["competes"])
                )
                found[1].append(compare(node, right_value, mine.value, entry["path"]))
                found[2].append(row.record)
    return found


def kept_values(schema: Schema, row: GoldRow, model: ScoreModel, claims: dict[str, FieldClaim] | None = None
                ) -> list[tuple[str, float | None, bool]]:  # fmt: skip
    """(field, score, right) of every value a run would keep for this record under `model`: each top-level
    field from the reading `choose` prefers, as `tasks.decide` builds the row. A field no reading holds
    counts as one value never kept."""
    by_reading: dict[str, dict[str, PathReading]] = {}
    entries = {entry["path"]: entry for entry in row.trust}
    for path, entry in entries.items():
        for name, reading in _paths(entry).items():
            by_reading.setdefault(name, {})[path] = reading

    def decide(path: str, name: str, mine: PathReading, other: PathReading | None) -> Judged:
        entry = entries[path]
        score = model.score(features(entry["field"], name, mine, other, entry["offered"], entry["competes"]))
        claim = (claims or {}).get(entry["field"])
        threshold = claim.threshold if claim else None
        return Judged(score, threshold, threshold is not None and score >= threshold)

    kept = []
    for key in dict.fromkeys(top_key(f) for f in schema_fields(schema.checked_body)):
        name, decisions = choose(key, by_reading, decide)
        if name is None:
            kept += [(f, None, False) for f in schema_fields(schema.checked_body) if top_key(f) == key
                     and "[]" not in f]  # fmt: skip
            continue
        for path, decision in decisions.items():
            node = node_at(schema.checked_body, parse_path(path)) or {}
            right = compare(node, gold_at(row.gold, path), by_reading[name][path].value, path)
            kept.append((entries[path]["field"], decision.score, right))
    return kept


def calibrate(schema: Schema, rows: Sequence[GoldRow], targets: dict[str, float] | None = None,
              level: float = LEVEL, pooled: Sequence[str] = ()) -> Calibrated:  # fmt: skip
    """Fit the score on `rows` and certify each field of `schema` (see the module docstring); the fields
    in `pooled` make one pooled claim together (tasks.confidence.certify.pooled_claims)."""
    x, right, records = examples(schema, rows)
    model, by_fold = fit(x, right), fold_models(x, right, records)
    scored = []
    per_row = []
    for row in rows:
        kept = kept_values(schema, row, by_fold[fold_of(row.record)])
        scored += [Scored(f, score, good, row.record if "[]" in f else None) for f, score, good in kept]
        per_row.append(kept)
    fields = schema_fields(schema.checked_body)
    targets = targets or field_targets(schema)
    claims = certify(scored, fields, targets, level, pooled)
    ok = [kept for kept in per_row if kept and all(
        score is not None and claims[f].threshold is not None and score >= claims[f].threshold  # type: ignore[operator]
        for f, score, _ in kept)]  # fmt: skip
    return Calibrated(model, claims, len(ok), sum(all(good for *_, good in kept) for kept in ok), level)


def pooled_fields(schema: Schema, claim: str) -> tuple[str, ...]:
    """The fields `claim` pools: none for `per-field` (the default: one claim per field), every field for
    `pooled`, the named ones for `pooled:FIELD,FIELD`. A claim is chosen before certifying, never from
    what the gold shows, so choosing it spends nothing."""
    fields = schema_fields(schema.checked_body)
    kind, _, named = claim.partition(":")
    if claim == "per-field":
        return ()
    if kind != "pooled":
        raise ValueError(f"--claim is per-field, pooled or pooled:FIELD,FIELD, not {claim!r}")
    chosen = [name.strip() for name in named.split(",") if name.strip()] or fields
    if unknown := [name for name in chosen if name not in fields]:
        raise ValueError(f"--claim pools {', '.join(unknown)}: no field of {schema.name} (its fields: "
                         f"{', '.join(fields)})")  # fmt: skip
    return tuple(name for name in fields if name in chosen)


def field_targets(schema: Schema) -> dict[str, float]:
    """Each field's target: its `x-target` where the schema sets one, else TARGET."""
    found = {}
    for name in schema_fields(schema.checked_body):
        node = node_at(schema.checked_body, parse_path(name.replace("[]", "[0]"))) or {}
        target = node.get("x-target")
        number = isinstance(target, int | float) and not isinstance(target, bool)
        found[name] = float(target) if number else TARGET
    return found
