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
needs: with k = 6 fields at 95% and 90%, 80 kept values all right (45 for one field alone). A field
with too few values to pass even were all right (counted, never judged) takes no share, and the
fields that can pass split the level (`charged`).

**Lists.** Where a field repeats in a record (list items), the record is the trial: its kept items
are right together or not (items of one receipt are wrong together, so counting them as independent
trials certified at 6.4% where 1.4% was allowed). **Pooled.** Chosen fields may instead make one
claim together, labelled pooled: one threshold and one bound over all their kept values, "of the
values kept in these fields, >= 95% are right", one test, so at the full level when it is the only
one; it says nothing of any single field (`pooled_claims`).

The bound is one-sided Clopper-Pearson (the binomial tail bisected, summed in log space). A field
that no threshold certifies is never kept as certified, and says so with the best bound it reached.
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
    # The tail P(X >= correct | p), X ~ Binomial(kept, p), summed term by term in log space. mpmath's
    # betainc failed to converge for large counts (hypsum) and findroot's illinois stopped short of its
    # tolerance for about half of all counts at levels past 0.99 (189 of 200 at 0.9979 raised), which
    # an audit's later looks reach; a sum of the upper tail's terms is exact to float rounding there.
    log_choose = [
        math.lgamma(kept + 1) - math.lgamma(i + 1) - math.lgamma(kept - i + 1)
        for i in range(correct, kept + 1)
    ]

    def tail(p: float) -> float:  # rises with p
        log_p, log_q = math.log(p), math.log1p(-p)
        return math.fsum(
            math.exp(c + i * log_p + (kept - i) * log_q) for i, c in enumerate(log_choose, correct)
        )

    # Bisection: the tail rises with p, so 64 halvings pin the quantile to the last bit of a float, and
    # the lower end is returned, never above the exact bound.
    low, high = 0.0, 1.0
    for _ in range(64):
        middle = (low + high) / 2
        if tail(middle) < alpha:
            low = middle
        else:
            high = middle
    return low


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
    """One value of one gold record as the calibration sees it: its field, score, and whether it is right.
    `unit`: the record, where the field repeats in a record (list items): its kept items are one trial,
    right only if every one is right (items of one receipt are wrong together, not independently)."""

    field: str
    score: float | None  # None: no probability to score (never kept)
    right: bool
    unit: str | None = None


def trials(values: Iterable[Scored], threshold: float = -math.inf) -> list[bool]:
    """Whether each trial the values scored at or above `threshold` make is right: a value alone, or a
    record's kept items of one field together (right only if all are)."""
    alone: list[bool] = []
    together: dict[tuple[str, str], bool] = {}
    for value in values:
        if value.score is None or value.score < threshold:
            continue
        if value.unit is None:
            alone.append(value.right)
        else:
            key = (value.field, value.unit)
            together[key] = together.get(key, True) and value.right
    return alone + list(together.values())


def size(values: Sequence[Scored]) -> int:
    """How many trials the values make when every one is kept (nulls and unscored values included)."""
    return sum(v.unit is None for v in values) + len({(v.field, v.unit) for v in values if v.unit})


def unit_of(values: Iterable[Scored]) -> str:
    """What a field's trials are: its records where its values carry one, else its values."""
    return "record" if any(v.unit is not None for v in values) else "value"


@dataclass(frozen=True)
class FieldClaim:
    """What a calibration certified for one field: its threshold (None: not certifiable), the values it
    keeps there on the gold and how many are right, the bound reached and at which level.

    `charged`: False where the field has too few values to pass even were all right, so it took no share
    of the level. `unit`: "record" where the field repeats in a record (counts are records, each right
    only if every kept item is). `pool`: the fields of a pooled claim (one threshold and one bound over
    all their kept values, `pool_correct` of `pool_kept`); `kept`/`correct` are then this field's part."""

    field: str
    target: float
    level: float  # this field's share: the level its bound was tested at
    values: int  # the field's values on the gold (nulls included)
    threshold: float | None
    kept: int
    correct: int
    bound: float  # at the threshold; where none passed, the best bound any threshold reached
    charged: bool = True
    unit: str = "value"
    pool: tuple[str, ...] = ()
    pool_kept: int = 0
    pool_correct: int = 0

    @property
    def certified(self) -> bool:
        return self.threshold is not None

    def sentence(self) -> str:
        """The field's guarantee in one sentence, as a run's summary prints it."""
        units = f"gold {self.unit}s"
        if not self.charged:
            return (f"{self.field}: not certifiable at {self.target:.0%} on {self.values} {units}: too few "
                    "to pass even were all right, so it takes no share of the level (the fields that can "
                    "pass split it)")  # fmt: skip
        pooled = f" pooled over {', '.join(self.pool)}" if self.pool else ""
        if self.threshold is None:
            return (f"{self.field}: not certifiable{pooled} at {self.target:.0%} on {self.values} {units} "
                    f"(best lower bound {self.bound:.3f}; {values_needed(self.target, self.level)} kept "
                    f"{'values' if self.pool else units} all right would be needed)")  # fmt: skip
        if self.pool:
            return (f"{self.field}: pooled over {', '.join(self.pool)}: of the values kept in these fields "
                    f"at score >= {self.threshold:g}, >= {self.bound:.1%} are right ({self.pool_correct}/"
                    f"{self.pool_kept} kept; this field {self.correct}/{self.kept} of {self.values}; target "
                    f"{self.target:.0%} together, not per field)")  # fmt: skip
        if self.unit == "record":
            return (f"{self.field}: of the records whose items are kept at score >= {self.threshold:g}, >= "
                    f"{self.bound:.1%} have every kept item right ({self.correct}/{self.kept} of "
                    f"{self.values} gold records, target {self.target:.0%})")  # fmt: skip
        return (f"{self.field}: values kept at score >= {self.threshold:g} are right at >= "
                f"{self.bound:.1%} ({self.correct}/{self.kept} of {self.values} gold values kept, "
                f"target {self.target:.0%})")  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FieldClaim:
        """A stored claim; one stored before charging, units and pools (every shipped file) has none."""
        found = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**found | ({"pool": tuple(found["pool"])} if "pool" in found else {}))

    def consistent(self) -> bool:
        """Whether the claim's own counts certify what it states: the bound recomputed from kept and
        correct (a pool's, for a pooled claim) at its level reaches its target (a damaged or hand-edited
        file does not). A field that took no share of the level certifies nothing."""
        if self.threshold is None:
            return True
        correct, kept = (self.pool_correct, self.pool_kept) if self.pool else (self.correct, self.kept)
        again = lower_bound(correct, kept, self.level)
        within = self.correct <= correct and self.kept <= kept
        return (self.charged and within and self.kept <= self.values and again >= self.target
                and abs(again - self.bound) < 1e-6)  # fmt: skip


def terms(claims: dict[str, FieldClaim], target: float, level: float) -> str:
    """What a calibration's claims state, in words, for a run's guarantee line: per field, or pooled over
    the fields named (never read as a claim about any one of them)."""
    pool = next((claim for claim in claims.values() if claim.pool), None)
    if pool is None:
        return f"target {target:.0%} per field, all fields together at {level:.0%} confidence"
    rest = "; the other fields per field" if len(pool.pool) < len(claims) else ""
    return (f"pooled over {', '.join(pool.pool)}: target {pool.target:.0%} over their kept values together, "
            f"not per field{rest}; all claims together at {level:.0%} confidence")  # fmt: skip


def shares(claims: Iterable[FieldClaim]) -> int:
    """How many tests share the level: each charged field's own, and one for each charged pool."""
    return len({claim.pool or claim.field for claim in claims if claim.charged})


@dataclass(frozen=True)
class Found:
    """What one fixed-sequence test found: the threshold (None: none passed), its counts and bound."""

    threshold: float | None
    kept: int
    correct: int
    bound: float


def sequence(values: Sequence[Scored], target: float, level: float,
             thresholds: Iterable[float] = THRESHOLDS) -> Found:  # fmt: skip
    """The lowest threshold whose kept trials reach `target` at `level`, by fixed-sequence testing."""
    found: Found | None = None
    best = 0.0
    needed = values_needed(target, level)
    for threshold in sorted(thresholds, reverse=True):
        kept = trials(values, threshold)
        if len(kept) < needed:
            continue  # too few to certify even if all were right: not tested, nothing spent (the count
            # kept depends on the scores alone, never on which values are right)
        bound = lower_bound(sum(kept), len(kept), level)
        best = max(best, bound)
        if bound < target:
            break
        found = Found(threshold, len(kept), sum(kept), bound)
    return found or Found(None, 0, 0, best)


def certify_field(field: str, values: Sequence[Scored], target: float, level: float,
                  thresholds: Iterable[float] = THRESHOLDS) -> FieldClaim:  # fmt: skip
    """The lowest threshold whose kept values reach `target` at `level`, by fixed-sequence testing."""
    found = sequence(values, target, level, thresholds)
    return FieldClaim(field, target, level, size(values), found.threshold, found.kept, found.correct,
                      found.bound, unit=unit_of(values))  # fmt: skip


def charged(tried: dict[tuple[str, ...], tuple[int, float]], level: float) -> set[tuple[str, ...]]:
    """The tests that take a share of the level, from counts only (`tried`: each test's fields, with how
    many trials it could keep and its target): the most tests k such that k of them keep enough to pass
    were every trial right at 1 - (1 - level) / k, those with the most room; the rest take no share.
    Never from which values are right, so leaving a test out spends nothing, and a test that cannot
    pass cannot make a false claim: the claims of the tests charged still hold together at `level`."""
    for k in range(len(tried), 0, -1):
        share = field_level(level, k)
        room = {key: count - values_needed(target, share) for key, (count, target) in tried.items()}
        passing = sorted((key for key in tried if room[key] >= 0), key=lambda key: (-room[key], key))
        if len(passing) >= k:
            return set(passing[:k])
    return set()


def certify(values: Sequence[Scored], fields: Sequence[str], targets: dict[str, float] | None = None,
            level: float = LEVEL, pooled: Sequence[str] = ()) -> dict[str, FieldClaim]:  # fmt: skip
    """Every field's claim, the level split evenly across the tests that can pass (`charged`): one per
    field of `fields` (all the schema's fields), except the fields in `pooled`, which make one test
    together, at the strictest of their targets (see `pooled_claims`)."""
    targets = targets or {}
    by_field = {name: [v for v in values if v.field == name] for name in fields}
    pool = tuple(name for name in fields if name in pooled)
    tried = {(name,): (len(trials(by_field[name])), targets.get(name, TARGET)) for name in fields
             if name not in pool}  # fmt: skip
    if pool:
        tried[pool] = (len(trials([v for name in pool for v in by_field[name]])),
                       max(targets.get(name, TARGET) for name in pool))  # fmt: skip
    paying = charged(tried, level)
    share = field_level(level, len(paying))
    claims = {}
    for name in fields:
        if name in pool:
            continue
        target, mine = targets.get(name, TARGET), by_field[name]
        unpaid = FieldClaim(name, target, share, size(mine), None, 0, 0, 0.0, False, unit_of(mine))
        claims[name] = certify_field(name, mine, target, share) if (name,) in paying else unpaid
    if pool:
        claims |= pooled_claims(pool, by_field, tried[pool][1], share, pool in paying)
    return {name: claims[name] for name in fields}


def pooled_claims(pool: tuple[str, ...], by_field: dict[str, list[Scored]], target: float, level: float,
                  paying: bool) -> dict[str, FieldClaim]:  # fmt: skip
    """One threshold and one bound over every kept value of the fields in `pool` ("of the values kept in
    these fields, >= target are right"): one test, so where it is the only one it takes the full level.
    It says nothing of any one field: a field right at 80% may sit beside one right at 100%."""
    together = [v for name in pool for v in by_field[name]]
    found = sequence(together, target, level) if paying else Found(None, 0, 0, 0.0)
    claims = {}
    for name in pool:
        own = trials(by_field[name], found.threshold) if found.threshold is not None else []
        claims[name] = FieldClaim(name, target, level, size(by_field[name]), found.threshold, len(own),
                                  sum(own), found.bound, paying, unit_of(by_field[name]), pool, found.kept,
                                  found.correct)  # fmt: skip
    return claims
