"""Calibrate `min_confidence` on gold data: how share ok trades against precision of ok, with a guarantee.

Every value carries the probability the formatting pass gave it (tasks.grounding.confidence). Which
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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

THRESHOLDS = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999)
TARGET = 0.95
LEVEL = 0.90  # one-sided confidence of the bound on precision of ok


@dataclass(frozen=True)
class Point:
    """One scored record: its status, whether every scored field is right, its least confident choice."""

    ok: bool
    correct: bool
    least: float | None  # None: no enum or boolean value with a probability


def least_confidence(evidence: Iterable[dict[str, Any]] | None) -> float | None:
    found = [e["confidence"] for e in evidence or [] if e.get("confidence") is not None]
    return min(found) if found else None


def curve(points: Sequence[Point], thresholds: Sequence[float] = THRESHOLDS) -> list[dict[str, Any]]:
    """Share ok and precision of ok at each threshold (None precision: no record left ok)."""
    rows = []
    for threshold in thresholds:
        kept = [p for p in points if p.ok and (p.least is None or p.least >= threshold)]
        precision = sum(p.correct for p in kept) / len(kept) if kept else None
        rows.append(
            {"threshold": threshold, "share_ok": len(kept) / max(len(points), 1), "precision_ok": precision}
        )
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

    def guarantee(self) -> str:
        if self.threshold is None:
            return (
                f"no threshold reaches precision of ok {self.target:.0%} at {self.level:.0%} "
                f"confidence (best lower bound {self.bound:.3f}, {self.correct}/{self.kept} right)"
            )
        return (
            f"precision of ok >= {self.bound:.3f} at {self.level:.0%} confidence (target "
            f"{self.target:.0%}; {self.correct}/{self.kept} gold rows right at least confidence "
            f">= {self.threshold:g})"
        )


def choose(
    points: Sequence[Point], target: float = TARGET, level: float = LEVEL,
    thresholds: Sequence[float] = THRESHOLDS,
) -> Choice:  # fmt: skip
    """The lowest threshold whose lower bound reaches `target`, by fixed-sequence testing (see above)."""
    found: Choice | None = None
    for threshold in sorted(thresholds, reverse=True):
        kept = [p for p in points if p.ok and (p.least is None or p.least >= threshold)]
        if not kept:
            continue  # a threshold that keeps no row makes no claim: nothing to test, nothing spent
        correct = sum(p.correct for p in kept)
        bound = lower_bound(correct, len(kept), level)
        if bound < target:
            return found or Choice(None, len(kept), correct, bound, target, level)
        found = Choice(threshold, len(kept), correct, bound, target, level)
    return found or Choice(None, 0, 0, 0.0, target, level)
