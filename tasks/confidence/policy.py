"""What a run holds each value to before it keeps it: a calibration's score and per-field thresholds,
the conservative default where none applies, or nothing at all while a calibration is measured.

- `calibrated`: each value is scored (tasks.confidence.score) and kept as certified when its score
  reaches its field's threshold (tasks.confidence.certify); a field no threshold certified keeps
  nothing as certified. A row is `ok` when every value is certified.
- `uncalibrated`: nothing vouches for any threshold, so no row is `ok`; a value is kept (unchecked)
  when every reading gave it with probability `UNCALIBRATED` or more and the readings agree, and an
  enum or boolean is never kept unless the text writes its label (a small model answered the first
  of seven labels for 30 of 30 comments at 0.42 to 0.88).
- `measuring`: `formwork eval --calibrate`: nothing is certified and nothing is dropped, so the rows
  hold what the readings said and the calibration fits on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from formwork.tasks.confidence.certify import FieldClaim
from formwork.tasks.confidence.features import features
from formwork.tasks.confidence.readings import PathReading, same
from formwork.tasks.confidence.score import ScoreModel

UNCALIBRATED = 0.99  # a quote, number or date kept unchecked needs this much from every reading
Kind = Literal["calibrated", "uncalibrated", "measuring"]


@dataclass(frozen=True)
class Judged:
    """What the policy decided about one value: its score (None: not scored), the threshold it was held
    to (None: none certifies its field), whether a calibration certifies it, whether the row keeps it
    (certified, or unchecked where no calibration applies, or anything while measuring), and why not."""

    score: float | None
    threshold: float | None
    certified: bool
    why: str = ""
    kept: bool | None = None  # None: kept exactly when certified

    @property
    def keeps(self) -> bool:
        return self.certified if self.kept is None else self.kept


@dataclass(frozen=True)
class Policy:
    kind: Kind
    model: ScoreModel | None = None
    claims: dict[str, FieldClaim] = field(default_factory=dict)
    floor: float = UNCALIBRATED

    @property
    def vouched(self) -> bool:
        """Whether a row may be `ok` (a calibration certifies its fields)."""
        return self.kind == "calibrated"

    def judge(self, field_name: str, name: str, mine: PathReading, other: PathReading | None,
              offered: int, competes: bool, choice: bool) -> Judged:  # fmt: skip
        """The decision for the value reading `name` gave at a path of `field_name`; `other` is the other
        reading's at the same path (None: one reading), `choice` an enum or boolean field."""
        if mine.probability is None:
            return Judged(None, None, False, "no probability (the engine gave no grammar-masked logprobs)")
        if self.kind == "measuring":
            return Judged(None, None, False, "measuring", kept=True)
        if self.kind == "uncalibrated":
            return self._unchecked(mine, other, choice)
        assert self.model is not None
        score = self.model.score(features(field_name, name, mine, other, offered, competes))
        claim = self.claims.get(field_name)
        if claim is None or claim.threshold is None:
            return Judged(score, None, False, "its field is not certified")
        if score < claim.threshold:
            return Judged(score, claim.threshold, False, f"unsure ({_compared(score, claim.threshold)})")
        return Judged(score, claim.threshold, True)

    def _unchecked(self, mine: PathReading, other: PathReading | None, choice: bool) -> Judged:
        if choice and not mine.written:
            return Judged(None, None, False, "no calibration covers this choice")
        probabilities = [mine.probability, *([other.probability] if other is not None else [])]
        if other is not None and not (other.usable and same(mine.value, other.value)):
            return Judged(None, self.floor, False, "the readings disagree")
        least = min(p if p is not None else 0.0 for p in probabilities)
        if least < self.floor:
            return Judged(None, self.floor, False, f"unsure ({_compared(least, self.floor, 'p')})")
        return Judged(None, self.floor, False, "kept unchecked: no calibration", kept=True)


def _compared(value: float, bound: float, name: str = "score") -> str:
    """`value < bound` with as many digits as it takes to show they differ ("0.9899 < 0.99", never
    "0.99 < 0.99")."""
    return f"{name} {apart(value, bound)} < {bound:g}"


def apart(value: float, bound: float) -> str:
    """`value`, below `bound`, written with as many digits as it takes to read as below it beside every
    digit of `bound` (every message that puts a probability beside its bound: tasks.confidence.bounds)."""
    digits = 2
    while digits < 6 and float(f"{value:.{digits}f}") >= bound:
        digits += 1
    return f"{value:.{digits}f}"
