"""Calibrate `min_confidence` on gold data: how share ok trades against precision of ok, with a guarantee.

Every value carries the probability the formatting pass gave it (tasks.confidence.probability). Which
probability is enough depends on the schema and the model, so it is measured: for each threshold, the
records still `ok` if every value chosen with less probability had failed, and how many of those are all
correct. `recommended` reads the point estimate; `choose` is what `formwork eval --calibrate` stores.

The method, and why one record score rather than a threshold per field: precision of ok is a property of
a row (every field right), so the score is the row's least confidence, and one threshold on it is one
field bound applied to every value (least >= t exactly when every value >= t). A threshold per field
would be a search over a product of grids, and every extra choice made on the same few gold records
spends the guarantee. The guarantee: precision of ok >= `target` with one-sided confidence `level`
(a Clopper-Pearson lower bound, the beta quantile from mpmath). Thresholds are tested in a fixed
sequence from the strictest down, each at the full level (one that keeps no row claims nothing and is
passed over), stopping at the first that fails; the lowest that passed is chosen. Fixed-sequence
testing keeps the chance of choosing a threshold whose true precision is below target at most
1 - level, so looking at the curve does not void the bound. It holds for records like the gold set's,
and needs enough of them: with every kept row right, 45 rows give a
lower bound of 0.1^(1/45) = 0.9501, so a gold set under 45 records cannot certify 95% at 90%.

A `partial` row promises that what it keeps is good, so a threshold must also certify the values kept
in rows that are `partial` at it, exactly as production decides (not a row it fails: no JSON, a
refused critical field, or a critical value below the threshold; in those rows, each value whose
confidence meets the threshold, or has none): the
same Clopper-Pearson bound on their precision, at the same level. A threshold passes only when each
claim it makes holds (rows, where it keeps any; values, where it keeps any): an intersection-union
test, which needs no correction for testing two claims. The values' bound treats each kept value as
one trial; values of one row are not independent (a bad reasoning pass spoils several), so it is
read as the precision per value, not a bound per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

THRESHOLDS = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999)
TARGET = 0.95
LEVEL = 0.90  # one-sided confidence of the bound on precision of ok


@dataclass(frozen=True)
class Point:
    """One scored record, measured with no bound: its status, whether every scored field is right, its
    least confident choice, its stored values, and what makes production fail it at a threshold."""

    ok: bool
    correct: bool
    least: float | None  # None: no enum or boolean value with a probability
    values: tuple[tuple[float | None, bool], ...] = ()  # each stored value: its confidence, whether right
    failed: bool = False  # failed whatever the bound: no JSON, a refused critical field, a cut pass
    critical: float | None = None  # the least confidence of a critical field's value: below the bound fails

    def is_ok(self, threshold: float) -> bool:
        return self.ok and (self.least is None or self.least >= threshold)

    def fails(self, threshold: float) -> bool:
        """Whether production fails this row at `threshold`: failed anyway, or a critical value below it."""
        return self.failed or (self.critical is not None and self.critical < threshold)

    def kept(self, threshold: float) -> list[bool]:
        """Whether each value this row keeps as `partial` at `threshold` is right: none when the row is
        ok there (precision of ok counts it) or failed there (production stores none of its values)."""
        if self.is_ok(threshold) or self.fails(threshold):
            return []
        return [right for confidence, right in self.values if confidence is None or confidence >= threshold]


def least_confidence(evidence: Iterable[dict[str, Any]] | None) -> float | None:
    found = [e["confidence"] for e in evidence or [] if e.get("confidence") is not None]
    return min(found) if found else None


def field_confidence(evidence: Iterable[dict[str, Any]] | None, key: str) -> float | None:
    """The least confidence of the values under the top-level field `key` (itself, `key.x`, `key[0]`)."""
    return least_confidence(
        e for e in evidence or [] if e["path"] == key or e["path"].startswith((f"{key}.", f"{key}["))
    )


def curve(points: Sequence[Point], thresholds: Sequence[float] = THRESHOLDS) -> list[dict[str, Any]]:
    """Share ok, precision of ok, and the values partial rows keep, at each threshold (None precision:
    nothing left)."""
    rows = []
    for threshold in thresholds:
        kept = [p for p in points if p.is_ok(threshold)]
        values = [right for p in points for right in p.kept(threshold)]
        rows.append({
            "threshold": threshold,
            "share_ok": len(kept) / max(len(points), 1),
            "precision_ok": sum(p.correct for p in kept) / len(kept) if kept else None,
            "partial_kept": len(values),
            "partial_precision": sum(values) / len(values) if values else None,
        })  # fmt: skip
    return rows


def recommended(rows: Sequence[dict[str, Any]], target: float = TARGET) -> float | None:
    """The lowest threshold whose precision of ok reaches `target`, if any does."""
    reaching = (r["threshold"] for r in rows if r["precision_ok"] is not None and r["precision_ok"] >= target)
    return next(reaching, None)


def lower_bound(correct: int, kept: int, level: float = LEVEL) -> float:
    """One-sided Clopper-Pearson lower bound on a proportion: the p at which `correct` or more right out
    of `kept` has probability 1 - level. 0 when nothing was kept or right."""
    if kept == 0 or correct == 0:
        return 0.0
    alpha = 1.0 - level
    if correct == kept:
        return alpha ** (1.0 / kept)  # the closed form of the same quantile
    import mpmath

    def tail(p: Any) -> Any:  # P(X >= correct | p) for X ~ Binomial(kept, p)
        return mpmath.betainc(correct, kept - correct + 1, 0, p, regularized=True) - alpha

    return float(mpmath.findroot(tail, (0, 1), solver="illinois"))


@dataclass(frozen=True)
class Choice:
    """What a calibration chose: the threshold (None: none reaches the target), and its evidence."""

    threshold: float | None
    kept: int  # rows ok at that threshold (at the strictest one when none passed)
    correct: int
    bound: float  # the lower bound on precision of ok reached there
    target: float = TARGET
    level: float = LEVEL
    values_kept: int = 0  # values partial rows keep there
    values_correct: int = 0
    values_bound: float | None = None  # the lower bound on their precision; None: none kept

    def guarantee(self) -> str:
        values = (
            f"values kept in partial rows >= {self.values_bound:.3f} ({self.values_correct}/"
            f"{self.values_kept} right)"
            if self.values_bound is not None
            else "no value kept in partial rows"
        )
        if self.threshold is None:
            return (
                f"no threshold reaches precision of ok {self.target:.0%} at {self.level:.0%} "
                f"confidence (best lower bound {self.bound:.3f}, {self.correct}/{self.kept} right; {values})"
            )
        rows = (
            f"precision of ok >= {self.bound:.3f} at {self.level:.0%} confidence (target "
            f"{self.target:.0%}; {self.correct}/{self.kept} gold rows right at least confidence "
            f">= {self.threshold:g})"
            if self.kept
            else f"no gold row ok at least confidence >= {self.threshold:g}, at {self.level:.0%} confidence"
        )
        return f"{rows}; {values}"


def choose(
    points: Sequence[Point], target: float = TARGET, level: float = LEVEL,
    thresholds: Sequence[float] = THRESHOLDS,
) -> Choice:  # fmt: skip
    """The lowest threshold whose lower bounds (rows ok, values kept) reach `target`, by fixed-sequence
    testing (see above)."""
    found: Choice | None = None
    for threshold in sorted(thresholds, reverse=True):
        kept = [p for p in points if p.is_ok(threshold)]
        values = [right for p in points for right in p.kept(threshold)]
        if not kept and not values:
            continue  # a threshold that keeps nothing makes no claim: nothing to test, nothing spent
        correct = sum(p.correct for p in kept)
        bound = lower_bound(correct, len(kept), level)
        values_bound = lower_bound(sum(values), len(values), level) if values else None
        here = Choice(threshold, len(kept), correct, bound, target, level, len(values), sum(values),
                      values_bound)  # fmt: skip
        if (kept and bound < target) or (values_bound is not None and values_bound < target):
            return found or replace(here, threshold=None)
        found = here
    return found or Choice(None, 0, 0, 0.0, target, level)
