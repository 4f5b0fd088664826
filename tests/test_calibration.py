"""The confidence threshold is calibrated on gold data: each threshold's share ok and precision of ok."""

from __future__ import annotations

import pytest

from formwork.tasks.evaluation.calibration import Point, curve, least_confidence, recommended


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
