"""Check a calibration's guarantee on gold records it did not see: held, broken, or too few to tell.

A calibration states "precision of ok >= target at confidence level" (and the same of the values
partial rows keep). Verification runs the gold records exactly as a run would, with the calibration a
run would apply (nothing is chosen again), and puts a Clopper-Pearson interval around each precision:
the one-sided lower and upper bounds, each at the calibration's level (together a two-sided interval
at 2 * level - 1). The verdict of each claim:

- broken: the upper bound is below the target; records like these contradict the claim;
- held: not broken, and there were enough rows to tell: at least as many as it takes all-right rows to
  certify the target on their own (45 for 95% at 90%), so a real shortfall had a fair chance to show;
- too few rows to tell: not broken, on fewer rows than that (or none kept).

The run's verdict is the worst of its claims' (broken, then too few, then held), leaving out a claim
under which nothing was kept (no row ok, or no value kept): it was never put to the test.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from formwork.tasks.evaluation.calibration import LEVEL, TARGET, lower_bound

Verdict = Literal["held", "broken", "too few rows to tell"]
ORDER: tuple[Verdict, ...] = ("broken", "too few rows to tell", "held")


def upper_bound(correct: int, kept: int, level: float = LEVEL) -> float:
    """One-sided Clopper-Pearson upper bound on a proportion (1 when nothing was kept)."""
    return 1.0 - lower_bound(kept - correct, kept, level) if kept else 1.0


def rows_to_tell(target: float = TARGET, level: float = LEVEL) -> int:
    """The fewest rows that, all right, certify `target` at `level`: alpha^(1/n) >= target."""
    return math.ceil(math.log(1.0 - level) / math.log(target))


@dataclass(frozen=True)
class Claim:
    """One precision checked: how many right of how many, its interval, and the verdict."""

    name: str
    correct: int
    kept: int
    lower: float
    upper: float
    verdict: Verdict

    def describe(self) -> str:
        if not self.kept:
            return f"{self.name}: none kept, too few rows to tell"
        return (f"{self.name}: {self.correct}/{self.kept} right, interval {self.lower:.3f} to "
                f"{self.upper:.3f}: {self.verdict}")  # fmt: skip


def check(name: str, correct: int, kept: int, target: float, level: float) -> Claim:
    upper, lower = upper_bound(correct, kept, level), lower_bound(correct, kept, level)
    verdict: Verdict = (
        "broken" if kept and upper < target
        else "held" if kept >= rows_to_tell(target, level)
        else "too few rows to tell"
    )  # fmt: skip
    return Claim(name, correct, kept, lower, upper, verdict)


def verify(ok: tuple[int, int], values: tuple[int, int], target: float = TARGET,
           level: float = LEVEL) -> dict[str, Any]:  # fmt: skip
    """The verdict on (right, kept) ok rows and (right, kept) values of partial rows."""
    claims = [check("precision of ok", *ok, target, level),
              check("values kept in partial rows", *values, target, level)]  # fmt: skip
    made = [c for c in claims if c.kept] or claims  # a claim nothing was kept under checks nothing
    verdict = min((c.verdict for c in made), key=ORDER.index)
    said = "; ".join(c.describe() for c in claims)
    return {"verdict": verdict, "target": target, "level": level, "claims": [asdict(c) for c in claims],
            "statement": f"{verdict} (target {target:.0%} at {level:.0%} confidence): {said}"}  # fmt: skip
