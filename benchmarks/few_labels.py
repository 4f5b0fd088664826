"""What 100 audited rows certify, and whether it holds, under each claim (issue 52 point 2). No model.

    .venv/bin/python benchmarks/few_labels.py [--seeds 400] [--rows 100]

Simulated, seeded: a schema of 6 fields, each right with its own probability drawn from 0.85-0.90 per
seed; a score that ranks at AUROC about 0.85 (a right value's latent is N(d, 1), a wrong one's N(0, 1),
d = sqrt(2) * z(0.85)) and is calibrated (the score is P(right | latent) for the field). The real
procedure (tasks.confidence.certify) then certifies from the audited rows under:

- per-field 90%, all charged: each field its own claim at 90%, the level split over all 6 fields (as
  before issue 52);
- per-field 90%, (a): the same, a field too small to pass taking no share;
- pooled 95%: one claim over every kept value of the 6 fields, at the full level.

Each is run on two schemas: every field in every row, and two of the six fields present in 30 of the
rows only (where (a) matters). Reported per option, over seeds: the share of future values certified
(coverage, from the score's distribution, not the audited rows), the true precision of those values,
and how often the claim is false (a certified field below its target, or the pool below its target):
that rate must stay at or below 1 - level = 10%.
"""

from __future__ import annotations

import argparse
import bisect
import math
import random
import statistics
from dataclasses import dataclass
from functools import cache

from formwork.tasks.confidence import certify as certifying
from formwork.tasks.confidence.certify import FieldClaim, Scored, certify, certify_field, field_level

FIELDS = ("a", "b", "c", "d", "e", "f")
AUROC = 0.85
LEVEL = 0.90


def _z(p: float) -> float:
    """The standard normal quantile, by bisection (no scipy here)."""
    lo, hi = -10.0, 10.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 0.5 * math.erfc(-mid / math.sqrt(2)) < p else (lo, mid)
    return (lo + hi) / 2


D = math.sqrt(2) * _z(AUROC)


def _tail(x: float) -> float:
    return 0.5 * math.erfc(x / math.sqrt(2))


@dataclass(frozen=True)
class Field:
    """One simulated field: how often it is right, so the score's law and any threshold's precision."""

    right: float

    def score(self, latent: float) -> float:
        odds = self.right / (1 - self.right) * math.exp(D * latent - D * D / 2)
        return odds / (1 + odds)

    def latent_at(self, threshold: float) -> float:
        """The latent above which the score reaches `threshold`."""
        if threshold <= 0:
            return -math.inf
        odds = threshold / (1 - threshold) * (1 - self.right) / self.right
        return (math.log(odds) + D * D / 2) / D

    def kept(self, threshold: float | None) -> tuple[float, float]:
        """(share of values kept, share kept and right) of all future values at `threshold`."""
        if threshold is None:
            return 0.0, 0.0
        s = self.latent_at(threshold)
        right = self.right * _tail(s - D)
        return right + (1 - self.right) * _tail(s), right


def _draw(rng: random.Random, fields: dict[str, Field], rows: int, sizes: dict[str, int]) -> list[Scored]:
    values = []
    for name, law in fields.items():
        for _ in range(sizes.get(name, rows)):
            right = rng.random() < law.right
            values.append(Scored(name, law.score(rng.gauss(D if right else 0.0, 1.0)), right))
    return values


def _auroc(values: list[Scored]) -> float:
    right = [v.score for v in values if v.right]
    wrong = sorted(v.score for v in values if not v.right)
    if not right or not wrong:
        return float("nan")
    below = sum(bisect.bisect_left(wrong, s) for s in right)
    ties = sum(bisect.bisect_right(wrong, s) - bisect.bisect_left(wrong, s) for s in right)
    return (below + ties / 2) / (len(right) * len(wrong))


@dataclass
class Tally:
    coverage: list[float]
    precision: list[float]
    false: int = 0

    def add(self, claims: dict[str, FieldClaim], fields: dict[str, Field], pooled: bool) -> None:
        kept = {name: fields[name].kept(claims[name].threshold) for name in fields}
        total = sum(k for k, _ in kept.values())
        self.coverage.append(total / len(fields))
        if total:
            self.precision.append(sum(r for _, r in kept.values()) / total)
        if pooled:
            self.false += bool(total) and sum(r for _, r in kept.values()) / total < claims["a"].target
        else:
            self.false += any(k and r / k < claims[n].target for n, (k, r) in kept.items())


def _all_charged(values: list[Scored], target: float) -> dict[str, FieldClaim]:
    """Per field with the level split over every field, charged or not (the rule before issue 52)."""
    share = field_level(LEVEL, len(FIELDS))
    by_field = {name: [v for v in values if v.field == name] for name in FIELDS}
    return {name: certify_field(name, by_field[name], target, share) for name in FIELDS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--rows", type=int, default=100)
    args = parser.parse_args()
    certifying.lower_bound = cache(certifying.lower_bound)  # type: ignore[assignment]  # same counts recur
    schemas = {"6 fields, every row": {}, "2 of 6 fields in 30 rows": {"e": 30, "f": 30}}
    options = ("per-field 90%, all charged", "per-field 90%, (a)", "pooled 95%")
    print(f"{args.rows} audited rows, {args.seeds} seeds, fields right 85-90%, score AUROC {AUROC} "
          f"(d = {D:.3f}), level {LEVEL:.0%}")  # fmt: skip
    print(f"{'schema':<26} {'claim':<28} {'coverage':>9} {'precision':>10} {'false claims':>13}")
    for title, sizes in schemas.items():
        tallies = {option: Tally([], []) for option in options}
        aurocs = []
        for seed in range(args.seeds):
            rng = random.Random(seed)
            fields = {name: Field(rng.uniform(0.85, 0.90)) for name in FIELDS}
            values = _draw(rng, fields, args.rows, sizes)
            aurocs.append(_auroc(values))
            tallies[options[0]].add(_all_charged(values, 0.90), fields, False)
            charged = certify(values, FIELDS, dict.fromkeys(FIELDS, 0.90), LEVEL)
            tallies[options[1]].add(charged, fields, False)
            pooled = certify(values, FIELDS, dict.fromkeys(FIELDS, 0.95), LEVEL, pooled=FIELDS)
            tallies[options[2]].add(pooled, fields, True)
        for option, tally in tallies.items():
            precision = statistics.fmean(tally.precision) if tally.precision else float("nan")
            print(f"{title:<26} {option:<28} {statistics.fmean(tally.coverage):>8.1%} {precision:>10.3f} "
                  f"{tally.false / args.seeds:>12.1%}")  # fmt: skip
        print(f"{'':<26} (measured AUROC over the audited values: {statistics.fmean(aurocs):.3f})")


if __name__ == "__main__":
    main()
