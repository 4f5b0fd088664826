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


def test_values_of_rows_production_fails_are_not_counted_as_kept() -> None:
    """Defect 4: 50 rows ok and sure; 45 partial rows keep a right value at 0.95; 5 rows that failed
    anyway (a refused critical field) hold a wrong value at 0.96; 5 rows hold a wrong value at 0.96 and
    a critical value at 0.5. Counting every row not ok stopped the sequence at 0.95 (45/55 right) and
    chose 0.99. Counted as production keeps them: the failed rows never keep a value, and the others
    only where their critical value meets the threshold (0.5 and below: 45/50 right), so 0.6 is chosen."""
    points = ([Point(True, True, 0.9995)] * 50
              + [Point(False, False, None, ((0.95, True),))] * 45
              + [Point(False, False, None, ((0.96, False),), failed=True)] * 5
              + [Point(False, False, None, ((0.96, False),), critical=0.5)] * 5)  # fmt: skip
    chosen = choose(points)
    assert chosen.threshold == 0.6 and (chosen.values_correct, chosen.values_kept) == (45, 45)
    rows = {r["threshold"]: r for r in curve(points, (0.3, 0.95))}
    assert rows[0.95]["partial_kept"] == 45 and rows[0.3]["partial_kept"] == 50
    assert Point(False, False, None, ((0.9, True),), critical=0.5).kept(0.6) == []
    assert Point(False, False, None, ((0.9, True),), critical=0.5).kept(0.5) == [True]


def test_a_point_is_built_from_the_stored_row_as_production_decides() -> None:
    from formwork.schemas.registry import load_schema
    from formwork.tasks.evaluation.points import point_of
    from formwork.tasks.evaluation.scoring import score_record

    expense = load_schema("expense")
    critical = sorted(expense.critical_fields)[0]
    other = next(k for k in expense.properties if k not in expense.critical_fields)
    gold = {key: None for key in expense.properties}
    data = dict.fromkeys(expense.properties) | {critical: "x", other: "y"}
    evidence = [{"path": critical, "confidence": 0.4}, {"path": other, "confidence": 0.97}]
    refused = point_of(expense, score_record(expense, "a", gold, "failed", data), data,
                       [f"{critical}: not in the text"], evidence)  # fmt: skip
    assert refused.failed and refused.kept(0.0) == []
    partial = point_of(expense, score_record(expense, "a", gold, "partial", data, [other]), data,
                       [f"{other}: not in the text"], evidence)  # fmt: skip
    assert not partial.failed and partial.critical == 0.4
    assert partial.kept(0.5) == [] and len(partial.kept(0.3)) == 2  # below 0.5 the critical value fails it
    assert point_of(expense, score_record(expense, "a", gold, "failed", None), None, ["no JSON"], None).failed


def _key(**changes: object):
    from formwork.schemas.registry import load_schema
    from formwork.tasks.evaluation.key import CalibrationKey

    expense = load_schema("expense")
    base = dict(schema_name=expense.name, schema_version=expense.version, schema_hash=expense.digest,
                model="m", model_hash="a" * 64, engine="local", mode="two-pass", grounded=True,
                reasoning_model="m")  # fmt: skip
    return CalibrationKey(**(base | changes))  # type: ignore[arg-type]


def _row(key, **values: object):
    from formwork.db.models import Calibration

    fields = dict(method="least-confidence", threshold=0.9, target=0.95, level=0.9, bound=0.955, kept=50,
                  correct=50, gold_hash="0" * 64, gold_size=60)  # fmt: skip
    return Calibration(**(key.as_dict() | fields | values))


def test_a_runs_sentence_states_the_bound_on_kept_values_or_that_there_is_none(any_db_url: str) -> None:
    """And a calibration that never measured kept values lowers the bound of rows, not of values."""
    from formwork.db.calibrations import bounds_for
    from formwork.db.session import session_factory

    sessions = session_factory(any_db_url)
    for values, said, bound in [
        ({"values_bound": 0.951, "values_kept": 46, "values_correct": 46}, " >= 0.951 (46/46)", 0.9),
        ({}, ": no bound (not measured)", 0.99),  # a calibration from before migration 0008
        ({"values_kept": 0, "values_correct": 0}, ": no bound (none kept on the gold records)", 0.99),
    ]:
        with sessions() as session:
            session.add(_row(_key(), **values))
            session.commit()
            found = bounds_for(session, _key())
        guarantee = found.applied["guarantee"]
        assert "precision of ok >= 0.955" in guarantee and f"values kept in partial rows{said}" in guarantee
        assert (found.values, found.choices) == (bound, 0.9)


ELSEWHERE = [{"mode": "one-pass"}, {"grounded": False}, {"model_hash": "b" * 64}, {"reasoning_model": "big"},
             {"engine": "vllm"}, {"schema_hash": "c" * 64}]  # fmt: skip


@pytest.mark.parametrize("other", ELSEWHERE)
def test_a_calibration_applies_to_its_own_key_only(any_db_url: str, other: dict) -> None:
    """Defect 3: made in one mode (or grounding, model file, reasoning model), it applies to no other."""
    from formwork.db.calibrations import NEVER, bounds_for
    from formwork.db.session import session_factory

    with session_factory(any_db_url)() as session:
        session.add(mine := _row(_key(), threshold=0.5))
        session.commit()
        assert bounds_for(session, _key()).applied["calibration"] == mine.id
        assert bounds_for(session, _key()).vouched
        elsewhere = bounds_for(session, _key(**other))
    assert elsewhere.applied["calibration"] is None and elsewhere.choices == NEVER
    assert not elsewhere.vouched and "so no row is ok" in elsewhere.applied["guarantee"]


def test_a_calibration_from_before_0009_no_longer_applies_and_the_summary_says_so(any_db_url: str) -> None:
    from formwork.db.calibrations import bounds_for
    from formwork.db.session import session_factory

    with session_factory(any_db_url)() as session:
        session.add(old := _row(_key(), model_hash=None, reasoning_model=None, grounded=None))
        session.commit()
        found = bounds_for(session, _key())
    assert found.applied["calibration"] is None and found.values == 0.99
    said = found.applied["guarantee"]
    assert f"calibration {old.id} was made before calibrations named the model file" in said


def test_a_shipped_calibration_applies_without_a_database_and_one_of_the_users_overrides_it(
    any_db_url: str, tmp_path, monkeypatch
) -> None:
    from formwork.db.calibrations import bounds_for, export_calibration, statement
    from formwork.db.session import session_factory
    from formwork.tasks.evaluation import shipped

    monkeypatch.setattr(shipped, "SHIPPED", tmp_path)
    with session_factory(any_db_url)() as session:
        session.add(made := _row(_key(), threshold=0.8, values_bound=0.96, values_kept=60, values_correct=60))
        session.commit()
        export_calibration(made, tmp_path / "expense.json")
        session.delete(made)
        session.commit()
        assert shipped.read_shipped(tmp_path / "expense.json")["gold_size"] == 60
        applied = bounds_for(session, _key()).applied  # a database without one of its own: the shipped one
        assert applied["calibration"] == "shipped in expense.json" and applied["threshold"] == 0.8
        assert statement(applied).startswith("calibration shipped in expense.json, p >= 0.8: precision of ok")
        assert bounds_for(None, _key()).applied["calibration"] == "shipped in expense.json"
        assert bounds_for(None, _key(mode="one-pass")).applied["calibration"] is None  # the full key only
        session.add(own := _row(_key(), threshold=0.95, values_bound=0.96, values_kept=60, values_correct=60))
        session.commit()
        assert bounds_for(session, _key()).applied["calibration"] == own.id  # the user's own gold wins


def test_a_shipped_file_without_its_key_is_refused(tmp_path) -> None:
    from formwork.tasks.evaluation.shipped import ShippedProblem, find_shipped

    (tmp_path / "bad.json").write_text('{"threshold": 0.9}')
    with pytest.raises(ShippedProblem, match="needs key"):
        find_shipped(_key(), tmp_path)


def test_the_model_file_hash_tells_two_files_of_one_name_apart_and_is_computed_once(tmp_path) -> None:
    from formwork.tasks.engines import fingerprint

    first, second = tmp_path / "a" / "model.gguf", tmp_path / "b" / "model.gguf"
    for path, body in ((first, b"weights one"), (second, b"weights two")):
        path.parent.mkdir()
        path.write_bytes(body)
    import hashlib

    assert fingerprint.file_hash(first) == hashlib.sha256(b"weights one").hexdigest()
    assert fingerprint.file_hash(first) != fingerprint.file_hash(second)
    misses = fingerprint._digest.cache_info().misses
    fingerprint.file_hash(first)
    assert fingerprint._digest.cache_info().misses == misses  # cached by path, inode, size and times
    second.write_bytes(b"weights three")  # a changed file is hashed again
    assert fingerprint.file_hash(second) == hashlib.sha256(b"weights three").hexdigest()


@pytest.mark.parametrize("how", ["renamed over", "written in place"])
def test_a_file_replaced_with_the_same_size_and_mtime_is_hashed_again(tmp_path, how: str) -> None:
    """Issue 41 point 12: a model file replaced by another of the same size, its mtime kept (`cp -p`,
    rsync -t, an unpacked archive), reused the old hash in a long-lived worker, so a calibration of
    the old weights applied to the new ones. The cache key holds the inode and ctime too."""
    import hashlib
    import os
    import time

    from formwork.tasks.engines import fingerprint

    path, other = tmp_path / "model.gguf", tmp_path / "incoming.gguf"
    path.write_bytes(b"weights one")
    old = os.stat(path)
    assert fingerprint.file_hash(path) == hashlib.sha256(b"weights one").hexdigest()
    time.sleep(0.05)  # a copy takes time: past the kernel's coarse clock tick, which stamps ctime
    if how == "renamed over":
        other.write_bytes(b"weights two")
        os.utime(other, ns=(old.st_atime_ns, old.st_mtime_ns))
        os.replace(other, path)
    else:
        with path.open("r+b") as handle:
            handle.write(b"weights two")
        os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    now = os.stat(path)
    assert (now.st_size, now.st_mtime_ns) == (old.st_size, old.st_mtime_ns)  # the old key would match
    assert fingerprint.file_hash(path) == hashlib.sha256(b"weights two").hexdigest()


def test_verification_says_held_broken_or_too_few_rows_to_tell() -> None:
    from formwork.tasks.evaluation.verification import rows_to_tell, upper_bound, verify

    assert rows_to_tell(0.95, 0.9) == 45
    assert upper_bound(9, 10) == pytest.approx(1 - lower_bound(1, 10)) and upper_bound(3, 3) == 1.0
    assert verify((45, 45), (0, 0))["verdict"] == "held"  # no value kept: that claim was not tested
    assert verify((30, 30), (0, 0))["verdict"] == "too few rows to tell"
    assert verify((2, 10), (50, 50))["verdict"] == "broken"  # 20% of ok rows right: upper bound < 95%
    said = verify((60, 60), (40, 60))
    assert said["verdict"] == "broken" and "values kept in partial rows: 40/60 right" in said["statement"]
