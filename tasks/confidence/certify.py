"""The guarantee per value, certified per field: for each field, the lowest score threshold whose kept
values are right at the field's target, with one confidence level shared by every field's claim.

A row guarantee is out of reach on gold sets of a hundred rows (95% at 90% needs 45 ok rows all
right, or 77 with one wrong, and a small model gets a third of rows all right), but a field has a
value in every row: its claim is tested on every record. Each field's values (nulls included: "the
text has none" is a claim too) are scored (tasks.confidence.score), and a threshold keeps the values
scored at or above it. Thresholds are tested in a fixed sequence from the strictest down, each at the
field's share of the level, stopping at the first that fails; the lowest that passed is the field's
threshold (fixed-sequence testing spends nothing for looking at the curve). A threshold that keeps too
few values to reach the target even were they all right is passed over untested: how many a threshold
keeps depends on the scores alone, not on which values are right, so skipping it spends nothing,
where testing it would end the sequence before the thresholds that keep enough (seen: every value of
a field right, yet the strictest threshold kept five and stopped the test).

**How the confidence is split.** The claims of all fields must hold together, so the error allowed,
1 - level, is split evenly across the schema's fields (Bonferroni: each field is tested at
1 - (1 - level) / k). The number of fields comes from the schema, never from the data, so the split
cannot be tuned on what the gold shows. With every value of every certified field right, the chance
that some field's claim is false is then at most 1 - level. The price is the number of values a field
needs: with k = 6 fields at 95% and 90%, 80 kept values all right (45 for one field alone).

The bound is one-sided Clopper-Pearson (the beta quantile, via mpmath). A field that no threshold
certifies is never kept as certified, and says so with the best bound it reached.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

TARGET = 0.95
LEVEL = 0.90  # one-sided confidence shared by every field's claim together
THRESHOLDS = (0.9999, 0.9995, 0.999, 0.998, 0.995, 0.99, 0.98, 0.97, 0.95, 0.93, 0.9, 0.85, 0.8, 0.7,
              0.6, 0.5, 0.0)  # fmt: skip


def counts_problem(correct: Any, kept: Any, level: Any = LEVEL) -> str | None:
    """Why these are no counts a bound is computed from, or None: whole numbers with 0 <= correct <= kept,
    a level strictly between 0 and 1. The beta quantile never returns for correct above kept (a shipped
    file claiming 98 right of 97 hung every run), so nothing else reaches it."""
    whole = all(isinstance(n, int) and not isinstance(n, bool) for n in (correct, kept))
    if not whole or not 0 <= correct <= kept:
        return f"{correct!r} right of {kept!r} kept are no counts (whole numbers, 0 <= right <= kept)"
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0.0 < level < 1.0:
        return f"level {level!r} is no confidence level (a number between 0 and 1)"
    return None


def lower_bound(correct: int, kept: int, level: float = LEVEL) -> float:
    """One-sided Clopper-Pearson lower bound on a proportion: the p at which `correct` or more right out
    of `kept` has probability 1 - level. 0 when nothing was kept or right. Counts that are none
    (`counts_problem`) raise ValueError: the quantile would never return."""
    if (problem := counts_problem(correct, kept, level)) is not None:
        raise ValueError(problem)
    if kept == 0 or correct == 0:
        return 0.0
    alpha = 1.0 - level
    if correct == kept:
        return alpha ** (1.0 / kept)  # the closed form of the same quantile
    import mpmath

    def tail(p: Any) -> Any:  # P(X >= correct | p) for X ~ Binomial(kept, p)
        return mpmath.betainc(correct, kept - correct + 1, 0, p, regularized=True) - alpha

    return float(mpmath.findroot(tail, (0, 1), solver="illinois"))


def upper_bound(correct: int, kept: int, level: float = LEVEL) -> float:
    """One-sided Clopper-Pearson upper bound on a proportion (1 when nothing was kept)."""
    return 1.0 - lower_bound(kept - correct, kept, level) if kept else 1.0


def values_needed(target: float = TARGET, level: float = LEVEL) -> int:
    """The fewest values that, all right, certify `target` at `level`: alpha^(1/n) >= target."""
    return math.ceil(math.log(1.0 - level) / math.log(target))


def field_level(level: float, fields: int) -> float:
    """Each field's share of the level when `fields` claims must hold together (Bonferroni)."""
    return 1.0 - (1.0 - level) / max(fields, 1)


@dataclass(frozen=True)
class Scored:
    """One value of one gold record as the calibration sees it: its field, score, and whether it is right."""

    field: str
    score: float | None  # None: no probability to score (never kept)
    right: bool


@dataclass(frozen=True)
class FieldClaim:
    """What a calibration certified for one field: its threshold (None: not certifiable), the values it
    keeps there on the gold and how many are right, the bound reached and at which level."""

    field: str
    target: float
    level: float  # this field's share: the level its bound was tested at
    values: int  # the field's values on the gold (nulls included)
    threshold: float | None
    kept: int
    correct: int
    bound: float  # at the threshold; where none passed, the best bound any threshold reached

    @property
    def certified(self) -> bool:
        return self.threshold is not None

    def sentence(self) -> str:
        """The field's guarantee in one sentence, as a run's summary prints it."""
        if self.threshold is None:
            return (f"{self.field}: not certifiable at {self.target:.0%} on {self.values} gold values "
                    f"(best lower bound {self.bound:.3f}; {values_needed(self.target, self.level)} kept "
                    "values all right would be needed)")  # fmt: skip
        return (f"{self.field}: values kept at score >= {self.threshold:g} are right at >= "
                f"{self.bound:.1%} ({self.correct}/{self.kept} of {self.values} gold values kept, "
                f"target {self.target:.0%})")  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FieldClaim:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})

    def consistent(self) -> bool:
        """Whether the claim's own counts certify what it states: the bound recomputed from kept and
        correct at its level reaches its target (a damaged or hand-edited file does not)."""
        if self.threshold is None:
            return True
        again = lower_bound(self.correct, self.kept, self.level)
        return self.kept <= self.values and again >= self.target and abs(again - self.bound) < 1e-6


def certify_field(field: str, values: Sequence[Scored], target: float, level: float,
                  thresholds: Iterable[float] = THRESHOLDS) -> FieldClaim:  # fmt: skip
    """The lowest threshold whose kept values reach `target` at `level`, by fixed-sequence testing."""
    found: FieldClaim | None = None
    best = 0.0
    needed = values_needed(target, level)
    for threshold in sorted(thresholds, reverse=True):
        kept = [v.right for v in values if v.score is not None and v.score >= threshold]
        if len(kept) < needed:
            continue  # too few to certify even if all were right: not tested, nothing spent (the count
            # kept depends on the scores alone, never on which values are right)
        bound = lower_bound(sum(kept), len(kept), level)
        best = max(best, bound)
        if bound < target:
            break
        found = FieldClaim(field, target, level, len(values), threshold, len(kept), sum(kept), bound)
    return found or FieldClaim(field, target, level, len(values), None, 0, 0, best)


def certify(values: Sequence[Scored], fields: Sequence[str], targets: dict[str, float] | None = None,
            level: float = LEVEL) -> dict[str, FieldClaim]:  # fmt: skip
    """Every field's claim, the level split evenly across `fields` (all the schema's fields)."""
    share, targets = field_level(level, len(fields)), targets or {}
    return {
        name: certify_field(name, [v for v in values if v.field == name], targets.get(name, TARGET), share)
        for name in fields
    }
