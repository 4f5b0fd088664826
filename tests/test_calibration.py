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


def test_a_threshold_must_also_certify_the_values_partial_rows_keep() -> None:
    """50 rows ok and sure (0.97); 45 partial rows keep a right value at 0.95 (and drop a wrong one at
    0.5); 3 partial rows keep a wrong value at 0.92. Rows alone certify every threshold down to 0.0
    (50/50 at each); the values stop the sequence at 0.9 (45/48 right, bound < 0.95), so 0.95 is
    chosen, where the 45 kept values give 0.1^(1/45) = 0.9501."""
    points = ([Point(True, True, 0.97)] * 50
              + [Point(False, False, None, ((0.95, True), (0.5, False)))] * 45
              + [Point(False, False, None, ((0.92, False),))] * 3)  # fmt: skip
    chosen = choose(points)
    assert chosen.threshold == 0.95 and (chosen.values_correct, chosen.values_kept) == (45, 45)
    assert chosen.values_bound == pytest.approx(0.1 ** (1 / 45))
    assert chosen.bound == pytest.approx(0.1 ** (1 / 50))
    assert "values kept in partial rows >= 0.950 (45/45 right)" in chosen.guarantee()
    assert choose(points[:50]).threshold == 0.0  # the same rows without the partial ones
    rows = {r["threshold"]: r for r in curve(points, (0.9, 0.95))}
    assert rows[0.9]["partial_kept"] == 48 and rows[0.9]["partial_precision"] == pytest.approx(45 / 48)
    assert rows[0.95]["partial_kept"] == 45 and rows[0.95]["partial_precision"] == 1.0


def test_a_row_ok_at_the_threshold_keeps_its_values_under_precision_of_ok_not_as_partial() -> None:
    sure = Point(True, True, 0.8, ((0.8, True), (0.9, True)))
    assert sure.kept(0.7) == [] and sure.kept(0.85) == [True]  # at 0.85 it is partial: 0.9 kept
    assert Point(False, False, None, ((None, False),)).kept(0.99) == [False]  # no confidence: kept


def test_a_runs_sentence_states_the_bound_on_kept_values_or_that_there_is_none(db_url: str) -> None:
    from formwork.db.calibrations import bounds_for
    from formwork.db.models import Calibration
    from formwork.db.session import session_factory
    from formwork.schemas.registry import load_schema

    expense = load_schema("expense")
    base = dict(schema_name=expense.name, schema_version=expense.version, schema_hash=expense.digest,
                model="m", engine="local", mode="two-pass", method="least-confidence", threshold=0.9,
                target=0.95, level=0.9, bound=0.955, kept=50, correct=50, gold_hash="0" * 64,
                gold_size=60)  # fmt: skip
    sessions = session_factory(db_url)
    for values, said in [
        ({"values_bound": 0.951, "values_kept": 46, "values_correct": 46}, " >= 0.951 (46/46)"),
        ({}, ": no bound (not measured)"),  # a calibration from before migration 0008
        ({"values_kept": 0, "values_correct": 0}, ": no bound (none kept on the gold records)"),
    ]:
        with sessions() as session:
            session.add(Calibration(**base, **values))
            session.commit()
            guarantee = bounds_for(session, expense, "m", "local").applied["guarantee"]
        assert "precision of ok >= 0.955" in guarantee and f"values kept in partial rows{said}" in guarantee
