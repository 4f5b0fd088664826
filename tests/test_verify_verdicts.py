"""Issue 52 point 6: a verdict says what the checking records show, never "held" for "not rejected".

`confirmed` only where the records' own Clopper-Pearson lower bound (at the field's share of the
project's level) reaches the target at the calibration's fixed threshold; `broken` where the upper
bound is below it; otherwise `not contradicted`, always said with k of n and the interval.
"""

from __future__ import annotations

import math

import pytest

from formwork.tasks.confidence.certify import LEVEL, field_level, lower_bound
from formwork.tasks.evaluation.verification import check, verify

SIX = field_level(LEVEL, 6)  # each field's share when six claims hold together, as expense's do


def test_77_of_82_at_95_is_not_confirmed_but_not_contradicted_with_its_numbers() -> None:
    claim = check("date", 77, 82, 0.95, SIX, 100)
    assert claim.verdict == "not contradicted"
    assert claim.lower < 0.95 <= claim.upper
    said = verify([claim], check("rows ok", 10, 10, 0.95, LEVEL))["statement"]
    assert said.startswith("not contradicted: date: 77/82 right, 82/100 kept, interval ")
    assert f"{claim.lower:.3f} to {claim.upper:.3f}" in said


def test_105_of_114_is_not_confirmed_and_every_value_right_on_enough_is() -> None:
    assert check("date", 105, 114, 0.95, SIX).verdict == "not contradicted"
    assert check("currency", 78, 78, 0.95, field_level(LEVEL, 3)).verdict == "confirmed"
    assert check("amount", 117, 117, 0.95, SIX).verdict == "confirmed"
    assert check("who", 30, 30, 0.95, SIX).verdict == "not contradicted"  # all right, but too few values


def test_broken_when_the_upper_bound_is_below_and_none_kept_is_not_put_to_the_test() -> None:
    assert check("date", 40, 60, 0.95, SIX).verdict == "broken"
    nothing = check("who", 0, 0, 0.95, SIX, 12)
    assert nothing.verdict == "not contradicted" and "none kept, 0/12 kept" in nothing.describe()


def test_the_run_verdict_is_the_worst_field_and_confirmed_only_when_every_kept_field_is() -> None:
    rows = check("rows ok", 10, 12, 0.95, LEVEL)
    sure, unsure, broken = check("a", 117, 117, 0.95, SIX), check("b", 77, 82, 0.95, SIX), check("c", 4, 9)
    assert verify([sure], rows)["verdict"] == "confirmed"
    assert verify([sure, unsure], rows)["verdict"] == "not contradicted"
    assert verify([sure, unsure, broken], rows)["verdict"] == "broken"
    assert verify([sure, check("none", 0, 0)], rows)["verdict"] == "confirmed"  # nothing kept: not tested


def _chance_confirmed(true_rate: float, kept: int, level: float, target: float = 0.95) -> float:
    """The exact chance that `kept` values right at `true_rate` each are called confirmed."""
    return sum(
        math.comb(kept, k) * true_rate**k * (1 - true_rate) ** (kept - k)
        for k in range(kept + 1)
        if check("f", k, kept, target, level).verdict == "confirmed"
    )


@pytest.mark.parametrize("kept", [82, 114, 200])
def test_a_field_below_its_target_is_confirmed_no_more_often_than_the_level_allows(kept: int) -> None:
    """82 values at a true 90% were called "held" 70% of the time; confirmed, they almost never are,
    and a field right exactly at its target is confirmed at most 1 - level of the time."""
    assert _chance_confirmed(0.90, kept, SIX) < 0.001
    assert _chance_confirmed(0.95, kept, SIX) <= 1 - SIX
    assert _chance_confirmed(0.95, kept, LEVEL) <= 1 - LEVEL
    assert lower_bound(kept, kept, SIX) >= 0.95 and _chance_confirmed(1.0, kept, SIX) == 1.0
