"""Issue 52 point 2: certification from few labels. A field that cannot pass takes no share of the
level; list items of one record count as one trial; a pooled claim over chosen fields is one test."""

from __future__ import annotations

import json

import pytest

from formwork.tasks.confidence.certify import (
    FieldClaim,
    Scored,
    certify,
    field_level,
    lower_bound,
    shares,
    trials,
    values_needed,
)
from formwork.tasks.evaluation.shipped import SHIPPED, read_shipped


def _values(field: str, right: int, wrong: int = 0, score: float = 0.999) -> list[Scored]:
    return [Scored(field, score, True)] * right + [Scored(field, score, False)] * wrong


def test_a_field_too_small_to_pass_takes_no_share_so_the_big_one_certifies() -> None:
    """50 values all right certify 95% at the full 90% (45 needed) but not at half the error (59): a
    5-value field beside it used to take half and leave the big one uncertified."""
    assert lower_bound(50, 50, field_level(0.9, 2)) < 0.95 <= lower_bound(50, 50, 0.9)
    claims = certify(_values("total", 50) + _values("note", 5), ["total", "note"])
    assert claims["total"].certified and claims["total"].level == pytest.approx(0.9)
    assert not claims["note"].certified and not claims["note"].charged
    assert "takes no share of the level" in claims["note"].sentence()
    assert shares(claims.values()) == 1


def test_which_fields_take_a_share_is_decided_from_counts_never_from_correctness() -> None:
    """The same counts charge the same fields whether their values are right or wrong."""
    for note_right in (0, 5):
        notes = _values("note", note_right, 5 - note_right)
        claims = certify(_values("total", 50) + notes, ["total", "note"])
        assert not claims["note"].charged and claims["total"].level == pytest.approx(0.9)
    wrong = certify(_values("total", 0, 70) + _values("other", 60), ["total", "other"])
    assert wrong["total"].charged and wrong["other"].level == pytest.approx(0.95)  # all wrong, still charged


def test_a_calibration_with_an_uncharged_field_ships_and_old_files_load_unchanged(tmp_path) -> None:
    originals = sorted(SHIPPED.glob("*.json"))
    assert originals and all(read_shipped(path)["fields"] for path in originals)  # each file as shipped
    data = json.loads(originals[0].read_text())
    claims = certify(_values("total", 50) + _values("note", 5), ["total", "note"])
    data["fields"] = {name: claim.as_dict() for name, claim in claims.items()}
    (tmp_path / "new.json").write_text(json.dumps(data))
    loaded = read_shipped(tmp_path / "new.json")["fields"]
    assert FieldClaim.from_dict(loaded["note"]) == claims["note"]
    forged = data["fields"]["note"] | {"threshold": 0.9, "kept": 5, "correct": 5, "bound": 0.96}
    (tmp_path / "forged.json").write_text(json.dumps(data | {"fields": data["fields"] | {"note": forged}}))
    with pytest.raises(ValueError, match="refused"):
        read_shipped(tmp_path / "forged.json")  # an uncharged field certifies nothing


def test_an_old_claim_without_the_new_entries_reads_as_charged_per_value() -> None:
    old = {"field": "amount", "target": 0.95, "level": 0.9, "values": 60, "threshold": 0.9, "kept": 50,
           "correct": 50, "bound": lower_bound(50, 50, 0.9)}  # fmt: skip
    claim = FieldClaim.from_dict(old)
    assert claim.charged and claim.unit == "value" and claim.pool == () and claim.consistent()
    assert values_needed(0.95, 0.9) == 45


def _receipts(records: int, wrong: int, items: int, score: float = 0.999) -> list[Scored]:
    """`records` receipts of `items` items each; the first `wrong` have every item wrong together."""
    return [
        Scored("items[].amount", score, r >= wrong, unit=f"r{r}")
        for r in range(records)
        for _ in range(items)
    ]


def test_items_of_one_record_wrong_together_are_one_trial_not_many() -> None:
    """80 receipts of 5 items, 2 receipts entirely wrong: as 400 items, 390/400 certify 95% at 90%; as
    80 records, 78/80 do not. The items of a receipt are not independent trials."""
    values = _receipts(80, 2, 5)
    assert lower_bound(390, 400, 0.9) >= 0.95 > lower_bound(78, 80, 0.9)  # item-counting would certify
    claim = certify(values, ["items[].amount"])["items[].amount"]
    assert (claim.values, claim.unit) == (80, "record") and not claim.certified
    assert "gold records" in claim.sentence()
    right = certify(_receipts(60, 0, 5), ["items[].amount"])["items[].amount"]
    assert right.certified and (right.kept, right.correct) == (60, 60)
    assert "have every kept item right" in right.sentence()


def test_a_record_with_one_wrong_kept_item_is_a_wrong_trial_and_unkept_items_do_not_count() -> None:
    values = [Scored("items[].sku", 0.999, True, "a"), Scored("items[].sku", 0.999, False, "a"),
              Scored("items[].sku", 0.999, True, "b"), Scored("items[].sku", 0.1, False, "b")]  # fmt: skip
    assert sorted(trials(values, 0.9)) == [False, True]  # a: one kept item wrong; b: its wrong item unkept
    assert sorted(trials(values, 0.0)) == [False, False]


def test_a_pooled_claim_is_one_test_at_the_full_level_over_every_kept_value() -> None:
    """Six fields of 50 values, 49 right each: no field reaches 95% at its share (or even alone), but
    294/300 together do, at the full level, and the claim says it is pooled."""
    fields = [f"f{i}" for i in range(6)]
    values = [v for name in fields for v in _values(name, 49, 1)]
    assert not any(c.certified for c in certify(values, fields).values())
    pooled = certify(values, fields, pooled=fields)
    assert all(c.certified and c.level == pytest.approx(0.9) for c in pooled.values())
    claim = pooled["f0"]
    assert (claim.pool_kept, claim.pool_correct, claim.kept, claim.correct) == (300, 294, 50, 49)
    assert claim.bound == pytest.approx(lower_bound(294, 300, 0.9)) and claim.consistent()
    assert claim.sentence().startswith("f0: pooled over f0, f1, f2, f3, f4, f5: of the values kept")
    assert shares(pooled.values()) == 1


def test_fields_left_out_of_the_pool_each_take_a_share_beside_it() -> None:
    values = _values("a", 100) + _values("b", 100) + _values("c", 100)
    claims = certify(values, ["a", "b", "c"], pooled=["a", "b"])
    assert claims["c"].pool == () and claims["a"].pool == ("a", "b")
    assert claims["c"].level == claims["a"].level == pytest.approx(0.95)  # two tests: the pool and c
    forged = FieldClaim.from_dict(claims["a"].as_dict() | {"pool_correct": 150})
    assert not forged.consistent()  # a pooled bound its pool's counts do not reach


def _shopping_rows(records: int, wrong: int, items: int) -> list:
    """Shopping lists of `items` items read once at p 0.99; the first `wrong` lists have every name wrong."""
    from formwork.tasks.confidence.readings import PathReading
    from formwork.tasks.evaluation.calibration import GoldRow

    def entry(path: str, field: str, value: object) -> dict:
        reading = PathReading(value, 0.99, "passed", "exact", True).as_dict()
        return {
            "path": path,
            "field": field,
            "readings": {"two-pass": reading},
            "offered": 5,
            "competes": False,
        }

    rows = []
    for r in range(records):
        gold_items = [{"name": f"item {r}-{j}", "quantity": 1} for j in range(items)]
        read = [(f"other {r}-{j}" if r < wrong else item["name"]) for j, item in enumerate(gold_items)]
        trust = [entry("store", "store", f"Shop {r}")]
        for j, name in enumerate(read):
            trust += [entry(f"items[{j}].name", "items[].name", name),
                      entry(f"items[{j}].quantity", "items[].quantity", 1)]  # fmt: skip
        rows.append(GoldRow(f"r{r}", trust, {"items": gold_items, "store": f"Shop {r}"}))
    return rows


def test_calibration_counts_a_list_field_by_record_so_wrong_lists_are_not_many_trials() -> None:
    """80 lists of 5 items, 2 lists with every name wrong: item-counting (390/400) would certify names
    at their share of the level; record-counting (78/80) does not, and quantities (80/80) do."""
    from formwork.schemas.registry import load_schema
    from formwork.tasks.evaluation.calibration import calibrate

    share = field_level(0.9, 3)
    assert lower_bound(390, 400, share) >= 0.95 > lower_bound(78, 80, share)
    claims = calibrate(load_schema("shopping_list"), _shopping_rows(80, 2, 5)).claims
    names = claims["items[].name"]
    assert (names.values, names.unit, names.certified) == (80, "record", False)
    assert claims["items[].quantity"].certified and claims["items[].quantity"].kept == 80
    assert claims["store"].unit == "value" and claims["store"].values == 80


def test_a_pooled_calibration_is_stored_applied_and_said_as_pooled(db_url: str) -> None:
    """`--claim pooled` end to end from the stored rows: the calibration stores one threshold for every
    pooled field, a run applies it to each, and its guarantee line says "pooled over" the fields."""
    from formwork.db.calibrations import policy_for, statement
    from formwork.db.session import session_factory
    from formwork.flows.eval_steps import calibrated
    from formwork.schemas.registry import load_schema
    from formwork.tasks.evaluation.gold import GoldRecord
    from formwork.tasks.evaluation.key import CalibrationKey

    schema = load_schema("shopping_list")
    rows = _shopping_rows(80, 2, 5)
    golds = [GoldRecord(row.record, "list", row.gold) for row in rows]
    key = CalibrationKey("shopping_list", 1, schema.digest, "m", None, "local", "two-pass", True, "m", "s",
                         "r1.f1.p0")  # fmt: skip
    with session_factory(db_url)() as session:
        said = calibrated(session, key, None, golds, schema, rows, 0.95, claim="pooled")  # type: ignore[arg-type]
        session.commit()
        assert all(sentence.split(": ")[1].startswith("pooled over") for sentence in said["fields"].values())
        applied = policy_for(session, key)
    claims = applied.policy.claims
    assert {c.threshold for c in claims.values()} == {claims["store"].threshold} and claims["store"].certified
    assert claims["store"].pool_kept == 80 * 3 and claims["store"].pool_correct == 80 * 3 - 2  # 2 lists wrong
    assert "pooled over items[].name, items[].quantity, store" in statement(applied.applied)
    assert "per field" not in applied.applied["guarantee"].replace("not per field", "")


def test_a_claim_names_fields_of_the_schema_or_is_refused_in_one_line() -> None:
    from formwork.schemas.registry import load_schema
    from formwork.tasks.evaluation.calibration import pooled_fields

    expense = load_schema("expense")
    assert pooled_fields(expense, "per-field") == ()
    assert pooled_fields(expense, "pooled:amount, date") == ("date", "amount")  # in the schema's order
    assert len(pooled_fields(expense, "pooled")) == 6
    with pytest.raises(ValueError, match=r"--claim pools total: no field of expense \(its fields: who, date"):
        pooled_fields(expense, "pooled:total")
    with pytest.raises(ValueError, match=r"--claim is per-field, pooled or pooled:FIELD,FIELD, not 'all'"):
        pooled_fields(expense, "all")
