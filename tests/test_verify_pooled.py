"""Issue 52 points 2 and 6, the checking side: `formwork eval --verify` and `formwork audit check` judge
what the calibration claimed. A pooled claim is checked as one claim over its fields' kept values
together (labelled pooled); each claim at the level calibration certified it at (its share of the
tests that could pass, not of all fields); and a list field's unit is its record, as in calibration.
No model: the rows and claims are built here, the calibration stored and applied as a run applies it.
"""

from __future__ import annotations

from typing import Any

import pytest

from formwork.db.calibration_store import store_calibration
from formwork.db.calibrations import policy_for
from formwork.db.session import session_factory
from formwork.schemas.registry import load_schema
from formwork.tasks.confidence.certify import LEVEL, FieldClaim, Scored, certify, field_level, lower_bound
from formwork.tasks.confidence.readings import PathReading
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.evaluation.calibration import Calibrated, GoldRow
from formwork.tasks.evaluation.certified import FieldCount, field_claims, field_counts
from formwork.tasks.evaluation.key import CalibrationKey
from formwork.tasks.evaluation.replay import replayed
from formwork.tasks.evaluation.verification import check, verify


def _values(field: str, right: int) -> list[Scored]:
    return [Scored(field, 0.999, True)] * right


def _applied(db_url: str, claims: dict[str, FieldClaim]) -> dict[str, Any]:
    """What a run applying these claims stores as its calibration (db.calibrations.policy_for)."""
    key = CalibrationKey("t", 1, "d", "m", None, "local", "two-pass", True, "m", "s", "r1.f1.p0")
    with session_factory(db_url)() as session:
        store_calibration(session, key, Calibrated(ScoreModel(), claims, 0, 0, LEVEL), 0.95, gold_hash="h",
                          gold_size=100, run_id=None)  # fmt: skip
        session.commit()
        return policy_for(session, key).applied


def test_a_pooled_claim_is_verified_as_one_claim_over_its_fields_kept_values(db_url: str) -> None:
    """a and b pooled, c alone: two tests at 95% each. On checking records a is 30/40 and b 200/200:
    the pool is 230/240, which does not contradict "of the values kept in a and b, >= 95% are right"; a
    alone is below 95%, but the claim never said anything of a alone, so a is not 'broken'."""
    claims = certify(_values("a", 100) + _values("b", 100) + _values("c", 100), ["a", "b", "c"],
                     pooled=["a", "b"])  # fmt: skip
    assert claims["a"].pool == ("a", "b") and claims["a"].certified and claims["c"].certified
    counts = {"a": FieldCount(50, 40, 30), "b": FieldCount(250, 200, 200), "c": FieldCount(100, 100, 100)}
    checked = field_claims(counts, _applied(db_url, claims))
    assert [c.name for c in checked] == ["pooled over a, b", "c"]
    pooled = checked[0]
    assert (pooled.correct, pooled.kept, pooled.values, pooled.pool) == (230, 240, 300, ("a", "b"))
    assert pooled.lower == pytest.approx(lower_bound(230, 240, field_level(LEVEL, 2)))
    assert pooled.verdict == "not contradicted" and check("a", 30, 40, 0.95, 0.95).verdict == "broken"
    said = verify(checked, check("rows ok", 0, 0))
    assert said["verdict"] == "not contradicted"
    assert "pooled over a, b: 230/240 right, 240/300 kept" in said["statement"]
    assert "together, not per field" in pooled.describe()


def test_a_pooled_claim_below_its_target_over_all_its_values_is_broken(db_url: str) -> None:
    claims = certify(_values("a", 100) + _values("b", 100), ["a", "b"], pooled=["a", "b"])
    counts = {"a": FieldCount(100, 100, 80), "b": FieldCount(100, 100, 90)}
    (pooled,) = field_claims(counts, _applied(db_url, claims))
    assert (pooled.correct, pooled.kept, pooled.verdict) == (170, 200, "broken")
    assert pooled.upper == pytest.approx(1 - lower_bound(30, 200, LEVEL))  # one test: the full level


def test_each_claim_is_checked_at_the_level_it_was_certified_at_not_split_over_every_field(
    db_url: str,
) -> None:
    """c has 10 values: too few to pass, it took no share, so a and b were certified at 95% each. 60
    of 60 right confirm 95% at that level (59 needed) but not at a third of the error (67 needed)."""
    claims = certify(_values("a", 100) + _values("b", 100) + _values("c", 10), ["a", "b", "c"])
    assert not claims["c"].charged and claims["a"].level == pytest.approx(field_level(LEVEL, 2))
    assert lower_bound(60, 60, field_level(LEVEL, 3)) < 0.95 <= lower_bound(60, 60, field_level(LEVEL, 2))
    counts = {"a": FieldCount(60, 60, 60), "b": FieldCount(60, 60, 60), "c": FieldCount(10, 0, 0)}
    checked = {c.name: c for c in field_claims(counts, _applied(db_url, claims))}
    assert checked["a"].verdict == checked["b"].verdict == "confirmed"
    assert checked["a"].lower == pytest.approx(lower_bound(60, 60, field_level(LEVEL, 2)))
    assert checked["c"].kept == 0 and checked["c"].verdict == "not contradicted"


def test_a_run_that_stored_no_levels_is_checked_at_the_level_split_over_its_fields() -> None:
    """A run stored before claims were charged by test: every field took a share then."""
    counts = {"a": FieldCount(60, 60, 60), "b": FieldCount(60, 60, 60), "c": FieldCount(60, 60, 60)}
    checked = field_claims(counts, {"level": LEVEL, "target": 0.95})
    assert [c.verdict for c in checked] == ["not contradicted"] * 3
    assert checked[0].lower == pytest.approx(lower_bound(60, 60, field_level(LEVEL, 3)))


def _entry(path: str, field: str, value: object) -> dict[str, Any]:
    reading = PathReading(value, 0.99, "passed", "exact", True).as_dict()
    return {"path": path, "field": field, "readings": {"two-pass": reading}, "reading": "two-pass",
            "certified": True, "offered": 5, "competes": False}  # fmt: skip


def _lists(records: int, wrong: int, items: int) -> list[GoldRow]:
    """Shopping lists of `items` items, all certified; the first `wrong` lists have every name wrong."""
    rows = []
    for r in range(records):
        gold = [{"name": f"item {r}-{j}", "quantity": 1} for j in range(items)]
        trust = [_entry("store", "store", f"Shop {r}")]
        for j, item in enumerate(gold):
            name = f"other {r}-{j}" if r < wrong else item["name"]
            trust += [_entry(f"items[{j}].name", "items[].name", name),
                      _entry(f"items[{j}].quantity", "items[].quantity", 1)]  # fmt: skip
        rows.append(GoldRow(f"r{r}", trust, {"items": gold, "store": f"Shop {r}"}))
    return rows


def test_a_list_field_is_checked_by_record_so_wrong_lists_are_not_many_values() -> None:
    """80 lists of 5 items, 2 lists with every name wrong: 78/80 records, as calibration counts them,
    not 390/400 items (which would confirm 95% at a third of the level's error)."""
    schema = load_schema("shopping_list")
    counts = field_counts(schema, _lists(80, 2, 5))
    names = counts["items[].name"]
    assert (names.values, names.certified, names.right) == (80, 80, 78)
    assert (counts["items[].quantity"].right, counts["store"].values) == (80, 80)
    share = field_level(LEVEL, 3)
    assert lower_bound(390, 400, share) >= 0.95 > lower_bound(78, 80, share)
    checked = {c.name: c for c in field_claims(counts, {"level": LEVEL, "target": 0.95})}
    assert checked["items[].name"].verdict == "not contradicted"
    assert "78/80 records right" in checked["items[].name"].describe()


def test_a_record_is_right_when_its_certified_items_are_and_one_wrong_item_makes_it_wrong() -> None:
    schema = load_schema("shopping_list")
    row = _lists(1, 0, 3)[0]
    row.trust[1] = {**row.trust[1], "certified": False, "readings": {"two-pass": PathReading(
        "nonsense", 0.99, "passed", "exact", True).as_dict()}}  # fmt: skip
    names = field_counts(schema, [row])["items[].name"]
    assert (names.values, names.certified, names.right) == (1, 1, 1)  # the wrong item was not kept
    row.trust[3] = {**row.trust[3], "readings": row.trust[1]["readings"]}
    names = field_counts(schema, [row])["items[].name"]
    assert (names.values, names.certified, names.right) == (1, 1, 0)


def test_a_replayed_run_counts_a_list_field_by_record() -> None:
    """`--from-run --verify` decides the stored rows again: it counts list fields as records too."""
    schema = load_schema("shopping_list")
    claims = {name: FieldClaim(name, 0.95, 0.9, 80, 0.0, 80, 80, 0.96, unit=unit)
              for name, unit in (("store", "value"), ("items[].name", "record"),
                                 ("items[].quantity", "record"))}  # fmt: skip
    counts, ok, ok_right = replayed(schema, _lists(80, 2, 5), ScoreModel(), claims)
    assert (counts["items[].name"].values, counts["items[].name"].right) == (80, 78)
    assert (ok, ok_right) == (80, 78)


def test_eval_verify_prints_the_pooled_claim_as_one_labelled_line(db_url: str) -> None:
    """What `formwork eval --verify` prints for a pooled calibration: one line for the pool, named as
    pooled, with its numbers; none for its fields one by one."""
    from formwork.flows.cli.eval_reports import _claim
    from formwork.flows.eval_steps import verified

    claims = certify(_values("a", 100) + _values("b", 100), ["a", "b"], pooled=["a", "b"])
    applied = _applied(db_url, claims)
    counts = {"a": FieldCount(100, 90, 90), "b": FieldCount(100, 90, 89)}
    report = verified(counts, 10, 10, applied, "calibration 1")
    assert [_claim(c) for c in report["fields"]] == [
        f"pooled over a, b: 179/180 right, 180/200 kept, interval {lower_bound(179, 180, LEVEL):.3f} to "
        f"{report['fields'][0]['upper']:.3f}: confirmed (target 95% together, not per field)"
    ]  # eval prints the claim's own describe(), which says the pool is no per-field claim
    assert "pooled over a, b" in applied["guarantee"] and report["verdict"] == "confirmed"
