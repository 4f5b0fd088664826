"""Check a calibration's guarantee on gold records it did not see: held, broken, or too few to tell.

A calibration states, per field, "values kept as certified are right at >= target, all fields
together at confidence level". Verification runs the gold records exactly as a run would, with the
calibration a run would apply (nothing is chosen again), and puts a Clopper-Pearson interval around
each certified field's precision (one-sided bounds, each at that field's share of the level). The
verdict of each claim:

- broken: the upper bound is below the target; records like these contradict the claim;
- held: not broken, and there were enough values to tell: at least as many as it takes all-right
  values to certify the target at that level on their own, so a real shortfall had a fair chance to show;
- too few rows to tell: not broken, on fewer values than that (or none kept).

The rows' precision (the share of `ok` rows entirely right) is reported as measured, with the same
kind of interval at the full level. The run's verdict is the worst of its fields' (broken, then too
few, then held), leaving out a field under which nothing was kept: it was never put to the test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from formwork.tasks.confidence.certify import LEVEL, TARGET, lower_bound, upper_bound, values_needed

Verdict = Literal["held", "broken", "too few rows to tell"]
ORDER: tuple[Verdict, ...] = ("broken", "too few rows to tell", "held")


@dataclass(frozen=True)
class Claim:
    """One precision checked: how many right of how many, its interval, and the verdict."""

    name: str
    correct: int
    kept: int
    lower: float
    upper: float
    verdict: Verdict
    values: int = 0  # every value of the field on these records (kept or not): coverage's denominator

    def describe(self) -> str:
        covered = f", {self.kept}/{self.values} kept" if self.values else ""
        if not self.kept:
            return f"{self.name}: none kept{covered}, too few to tell"
        return (f"{self.name}: {self.correct}/{self.kept} right{covered}, interval {self.lower:.3f} to "
                f"{self.upper:.3f}: {self.verdict}")  # fmt: skip


def check(name: str, correct: int, kept: int, target: float = TARGET, level: float = LEVEL,
          values: int = 0) -> Claim:  # fmt: skip
    upper, lower = upper_bound(correct, kept, level), lower_bound(correct, kept, level)
    verdict: Verdict = (
        "broken" if kept and upper < target
        else "held" if kept >= values_needed(target, level)
        else "too few rows to tell"
    )  # fmt: skip
    return Claim(name, correct, kept, lower, upper, verdict, values)


def verify(fields: Sequence[Claim], rows: Claim) -> dict[str, Any]:
    """The verdict over the certified fields' claims, with the rows' measured precision beside it."""
    made = [c for c in fields if c.kept] or list(fields) or [rows]
    verdict = min((c.verdict for c in made), key=ORDER.index)
    said = "; ".join(c.describe() for c in fields)
    return {"verdict": verdict, "fields": [asdict(c) for c in fields], "rows": asdict(rows),
            "statement": f"{verdict}: {said}; {rows.describe()} (measured)"}  # fmt: skip
