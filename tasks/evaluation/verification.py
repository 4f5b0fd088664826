"""Check a calibration's guarantee on gold records it did not see: confirmed, broken, or not contradicted.

A calibration states, per field, "values kept as certified are right at >= target, all fields
together at confidence level". Verification runs the gold records exactly as a run would, with the
calibration a run would apply (nothing is chosen again: the thresholds stay fixed), and puts a
one-sided Clopper-Pearson interval around each certified field's precision on these records, each at
that field's share of the level (the same bound and level calibration certifies with). The verdict of
each claim says only what these records show:

- confirmed: the checking data's own lower bound reaches the target; these records alone would certify it;
- broken: the upper bound is below the target; records like these contradict the claim;
- not contradicted: neither; the claim may hold or not, and these records cannot tell which (none
  kept is this too). "Not rejected" is not "held": 82 values at a true 90% are not rejected against a
  95% target most of the time, and are confirmed almost never.

A pooled claim ("of the values kept in these fields, >= target are right") is checked as it was made: one
claim over the kept values of its fields together, at its own level, labelled pooled; it is never
judged field by field, since it says nothing of any one field. Where a field repeats in a record (list
items), the record is the unit, right only if every kept item is, as calibration counts it.

Every verdict is said with its numbers: right of kept and the interval. The rows' precision (the share
of `ok` rows entirely right) is reported as measured, with the same kind of interval at the full level.
The run's verdict is the worst of its fields' (broken, then not contradicted, then confirmed), leaving
out a field under which nothing was kept: it was never put to the test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from formwork.tasks.confidence.certify import LEVEL, TARGET, lower_bound, upper_bound

Verdict = Literal["confirmed", "broken", "not contradicted"]
ORDER: tuple[Verdict, ...] = ("broken", "not contradicted", "confirmed")


@dataclass(frozen=True)
class Claim:
    """One precision checked: how many right of how many, its interval, and the verdict. `pool`: the
    fields of a pooled claim, counted together; `unit`: "record" where the counts are records (lists)."""

    name: str
    correct: int
    kept: int
    lower: float
    upper: float
    verdict: Verdict
    values: int = 0  # every value of the field on these records (kept or not): coverage's denominator
    target: float = TARGET
    pool: tuple[str, ...] = ()
    unit: str = "value"

    def describe(self) -> str:
        covered = f", {self.kept}/{self.values} kept" if self.values else ""
        units = " records" if self.unit == "record" else ""
        together = f" (target {self.target:.0%} together, not per field)" if self.pool else ""
        if not self.kept:
            return f"{self.name}: none kept{covered}, not put to the test: {self.verdict}{together}"
        return (f"{self.name}: {self.correct}/{self.kept}{units} right{covered}, interval {self.lower:.3f} "
                f"to {self.upper:.3f}: {self.verdict}{together}")  # fmt: skip


def verdict_of(lower: float, upper: float, kept: int, target: float) -> Verdict:
    """The verdict of an interval on `kept` values against `target` (see the module's docstring)."""
    if kept and upper < target:
        return "broken"
    if kept and lower >= target:
        return "confirmed"
    return "not contradicted"


def check(name: str, correct: int, kept: int, target: float = TARGET, level: float = LEVEL,
          values: int = 0, pool: tuple[str, ...] = (), unit: str = "value") -> Claim:  # fmt: skip
    """The claim `precision >= target` checked on `correct` right of `kept`, bounds at `level`."""
    upper, lower = upper_bound(correct, kept, level), lower_bound(correct, kept, level)
    verdict = verdict_of(lower, upper, kept, target)
    return Claim(name, correct, kept, lower, upper, verdict, values, target, pool, unit)


def verify(fields: Sequence[Claim], rows: Claim) -> dict[str, Any]:
    """The verdict over the certified fields' claims, with the rows' measured precision beside it."""
    made = [c for c in fields if c.kept] or list(fields) or [rows]
    verdict = min((c.verdict for c in made), key=ORDER.index)
    said = "; ".join(c.describe() for c in fields)
    return {"verdict": verdict, "fields": [asdict(c) for c in fields], "rows": asdict(rows),
            "statement": f"{verdict}: {said}; {rows.describe()} (measured)"}  # fmt: skip
