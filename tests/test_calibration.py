"""The confidence threshold is calibrated on gold data: each threshold's share ok and precision of ok."""

from __future__ import annotations

import pytest

from formwork.tasks.evaluation.calibration import (
    Point,
    choose,
    curve,
    least_confidence,
    lower_bound,
    recommended,
)


def test_least_confidence_is_the_weakest_chosen_value() -> None:
    evidence = [{"path": "who", "confidence": None}, {"path": "currency", "confidence": 0.9},
                {"path": "category", "confidence": 0.4}]  # fmt: skip
    assert least_confidence(evidence) == 0.4
    assert least_confidence([{"path": "who"}]) is None and least_confidence(None) is None


def test_the_curve_trades_share_ok_for_precision_and_names_the_lowest_threshold() -> None:
    points = [
        Point(ok=True, correct=True, least=0.95), Point(ok=True, correct=True, least=0.85),
        Point(ok=True, correct=False, least=0.55), Point(ok=True, correct=False, least=0.35),
        Point(ok=False, correct=False, least=0.99), Point(ok=True, correct=True, least=None),
    ]  # fmt: skip
    rows = {r["threshold"]: r for r in curve(points, (0.0, 0.5, 0.6, 0.9))}
    assert rows[0.0]["share_ok"] == pytest.approx(5 / 6) and rows[0.0]["precision_ok"] == pytest.approx(3 / 5)
    assert rows[0.5]["precision_ok"] == pytest.approx(3 / 4)
    assert rows[0.6]["share_ok"] == pytest.approx(3 / 6) and rows[0.6]["precision_ok"] == 1.0
    assert recommended(list(rows.values())) == 0.6
    assert (
        recommended([{"threshold": 0.0, "precision_ok": 0.5}, {"threshold": 0.9, "precision_ok": None}])
        is None
    )


def test_the_lower_bound_is_the_clopper_pearson_quantile_computed_by_hand() -> None:
    # all right: P(all n right | p) = p^n = 0.10 gives p = 0.1^(1/n)
    assert lower_bound(45, 45) == pytest.approx(0.1 ** (1 / 45)) and lower_bound(45, 45) > 0.95
    assert lower_bound(44, 44) == pytest.approx(0.1 ** (1 / 44)) and lower_bound(44, 44) < 0.95
    # one right of ten: P(X >= 1 | p) = 1 - (1 - p)^10 = 0.10 gives p = 1 - 0.9^(1/10)
    assert lower_bound(1, 10) == pytest.approx(1 - 0.9**0.1)
    # nine of ten: P(X >= 9) = 10 p^9 (1 - p) + p^10 = 0.10, which p = 0.66315 solves
    p = lower_bound(9, 10)
    assert 10 * p**9 * (1 - p) + p**10 == pytest.approx(0.10) and p == pytest.approx(0.66315, abs=1e-5)
    assert lower_bound(0, 10) == 0.0 and lower_bound(0, 0) == 0.0


def test_calibration_on_a_hand_made_gold_set_keeps_the_bound_not_the_point_estimate() -> None:
    """50 rows sure and right (least 0.97), 4 wrong at 0.85, 6 right at 0.6, 5 not ok.

    At 0.95 or above: 50/50 right, bound 0.1^(1/50) = 0.955 >= 0.95, so those pass; at 0.9 the same
    50 rows; at 0.8: 50/54 right, bound < 0.95: the sequence stops, and 0.9 is chosen. The point
    estimate at 0.6 (56/60 = 93%) and at 0.8 (93%) never reached 95% anyway; at 0.99 nothing is kept.
    """
    points = ([Point(True, True, 0.97)] * 50 + [Point(True, False, 0.85)] * 4
              + [Point(True, True, 0.6)] * 6 + [Point(False, False, 0.99)] * 5)  # fmt: skip
    chosen = choose(points)
    assert chosen.threshold == 0.9 and (chosen.correct, chosen.kept) == (50, 50)
    assert chosen.bound == pytest.approx(0.1 ** (1 / 50))
    assert "precision of ok >= 0.955 at 90% confidence" in chosen.guarantee()


def test_too_few_gold_rows_certify_nothing_even_when_every_one_is_right() -> None:
    chosen = choose([Point(True, True, 0.99)] * 44)  # 0.1^(1/44) = 0.9490
    assert chosen.threshold is None and chosen.bound == pytest.approx(0.1 ** (1 / 44))
    assert "no threshold reaches" in chosen.guarantee()
    assert choose([Point(True, True, 0.99)] * 44, target=0.9).threshold == 0.0  # the loosest passes
