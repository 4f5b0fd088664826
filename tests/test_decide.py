"""A row from its readings (tasks.decide): each field from the surer reading, each value kept only where
the policy certifies it, and the status that follows.

The readings are judged by the real judge; their answers are written at stated probabilities (no real
model writes a chosen value at a chosen probability), one token per value, every other token forced.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from formwork.schemas.registry import Schema, schema_from_body
from formwork.tasks.calls import UNVOUCHED
from formwork.tasks.confidence.certify import FieldClaim
from formwork.tasks.confidence.policy import Policy
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.decide import decide
from formwork.tasks.engines.base import Completion
from formwork.tasks.validate import Verdict, judge

BODY: dict[str, Any] = {
    "title": "decide_test",
    "type": "object",
    "properties": {
        "who": {"type": ["string", "null"], "maxLength": 40, "description": "Who paid."},
        "amount": {"type": "number", "x-critical": True, "description": "How much."},
        "category": {"enum": ["meals", "travel", None], "description": "What for."},
    },
    "required": ["who", "amount", "category"],
    "additionalProperties": False,
}
SCHEMA = schema_from_body(BODY, "decide_test.json")
TEXT = "Maria paid 42.80 EUR for lunch with the client, 3 people."
NOTES = Completion("notes", "stop", 1, 1, 0.0, "scripted")


def read(_schema: Schema = SCHEMA, _text: str = TEXT, **values: tuple[Any, float]) -> Verdict:
    """The judged verdict of an answer writing each field's value at its probability (of `_text`, under
    `_schema`: this module's, unless another test's)."""
    pieces: list[tuple[str, float]] = [("{", 0.0)]
    for i, (key, (value, probability)) in enumerate(values.items()):
        pieces.append((("" if i == 0 else ", ") + f'"{key}": ', 0.0))
        pieces.append((json.dumps(value), math.log(probability)))
    pieces.append(("}", 0.0))
    written = Completion("".join(p for p, _ in pieces), "stop", 1, 1, 0.0, "scripted", tuple(pieces))
    return judge(_schema, _text, NOTES, written)


def claims(threshold: float | None = 0.9) -> dict[str, FieldClaim]:
    return {name: FieldClaim(name, 0.95, 0.97, 100, threshold, 90, 90, 0.97) for name in BODY["properties"]}


# A score that reads agreement above all, then each reading's own probability.
SCORE = ScoreModel({"own": 1.0, "agree": 4.0}, -4.0)
CALIBRATED = Policy("calibrated", SCORE, claims())
ALONE = Policy("calibrated", ScoreModel({"own": 1.0}), claims())  # a score that is the probability itself


def test_readings_that_agree_and_are_sure_make_an_ok_row_with_every_value_certified() -> None:
    both = read(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.99))
    verdict = decide(SCHEMA, {"two-pass": both, "notes-free": both}, CALIBRATED, {}, False)
    assert verdict.status == "ok" and verdict.data == {"who": "Maria", "amount": 42.8, "category": "meals"}
    assert [t["certified"] for t in verdict.trust] == [True, True, True]
    assert verdict.trust[0]["readings"]["notes-free"]["value"] == "Maria"


def test_each_field_comes_from_the_reading_that_scores_it_higher() -> None:
    """The notes dropped the person (two-pass null at 0.7); the notes-free reading read her at 0.95."""
    two_pass = read(who=(None, 0.7), amount=(42.8, 0.99), category=("meals", 0.99))
    notes_free = read(who=("Maria", 0.95), amount=(42.8, 0.99), category=("meals", 0.99))
    verdict = decide(SCHEMA, {"two-pass": two_pass, "notes-free": notes_free}, CALIBRATED, {}, False)
    who = verdict.trust[0]
    assert who["reading"] == "notes-free" and verdict.data["who"] is None  # kept, but unsure alone: dropped
    assert not who["certified"] and "dropped: unsure (score" in " ".join(verdict.errors)
    assert verdict.status == "partial" and verdict.data["amount"] == 42.8  # the rest is kept


def test_an_unsure_critical_value_makes_the_row_partial_not_failed() -> None:
    """A stronger model may still read it: the row keeps its certified values, says why, and is not
    failed (a failed row stores nothing a reader can use)."""
    two_pass = read(who=("Maria", 0.99), amount=(3, 0.6), category=("meals", 0.99))
    notes_free = read(who=("Maria", 0.99), amount=(42.8, 0.6), category=("meals", 0.99))
    verdict = decide(SCHEMA, {"two-pass": two_pass, "notes-free": notes_free}, CALIBRATED, {}, False)
    assert verdict.status == "partial" and "amount" not in verdict.data  # the schema cannot hold its null
    assert verdict.data["who"] == "Maria" and "amount" in verdict.nulled
    assert any(e.startswith("amount ") and "dropped" in e for e in verdict.errors)


def test_a_field_no_threshold_certifies_never_keeps_a_value_as_certified() -> None:
    both = read(who=("Maria", 1.0), amount=(42.8, 1.0), category=("meals", 1.0))
    policy = Policy("calibrated", SCORE, claims() | {"category": FieldClaim("category", 0.95, 0.97, 100, None,
                                                                           0, 0, 0.8)})  # fmt: skip
    verdict = decide(SCHEMA, {"two-pass": both, "notes-free": both}, policy, {}, False)
    assert verdict.status == "partial" and verdict.data["category"] is None
    assert 'category "meals" dropped: its field is not certified' in verdict.errors


def test_a_reading_with_no_json_leaves_the_row_to_the_other() -> None:
    broken = judge(SCHEMA, TEXT, NOTES, Completion("{", "length", 1, 1, 0.0, "scripted"))
    sure = read(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.99))
    verdict = decide(SCHEMA, {"two-pass": broken, "notes-free": sure}, ALONE, {}, False)
    assert verdict.status == "ok" and verdict.data == {"who": "Maria", "amount": 42.8, "category": "meals"}
    assert {t["reading"] for t in verdict.trust} == {"notes-free"}
    alone = decide(SCHEMA, {"two-pass": broken, "notes-free": sure}, CALIBRATED, {}, False)
    assert not alone.trust[0]["certified"] and alone.data["who"] is None  # no agreement to vouch for it
    failed = decide(SCHEMA, {"two-pass": broken, "notes-free": broken}, CALIBRATED, {}, False)
    assert failed.status == "failed" and failed.data is None


def test_a_value_the_judge_refused_is_taken_from_the_other_reading() -> None:
    invented = read(who=("Bob", 0.99), amount=(42.8, 0.99), category=("meals", 0.99))  # Bob is not in it
    right = read(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.99))
    verdict = decide(SCHEMA, {"two-pass": invented, "notes-free": right}, ALONE, {}, False)
    assert verdict.data["who"] == "Maria" and verdict.trust[0]["reading"] == "notes-free"
    assert verdict.trust[0]["readings"]["two-pass"]["verdict"] == "refused"


@pytest.mark.parametrize(
    ("two_pass", "notes_free", "kept"),
    [
        (("Maria", 0.995), ("Maria", 0.999), True),  # agree, both sure: kept unchecked
        (("Maria", 0.995), ("Maria", 0.9), False),  # agree, one unsure
        (("Maria", 0.995), (None, 0.999), False),  # disagree
    ],
)
def test_without_a_calibration_a_value_is_kept_only_where_every_reading_gives_it_surely(
    two_pass: tuple, notes_free: tuple, kept: bool
) -> None:
    first = read(who=two_pass, amount=(42.8, 0.999), category=("meals", 1.0))
    second = read(who=notes_free, amount=(42.8, 0.999), category=("meals", 1.0))
    verdict = decide(SCHEMA, {"two-pass": first, "notes-free": second}, Policy("uncalibrated"), {}, False)
    assert verdict.status == "partial" and (verdict.data["who"] == "Maria") is kept
    assert verdict.data["category"] is None  # a choice whose label the text does not write: never kept
    assert "no calibration covers this choice" in " ".join(verdict.errors)


def test_the_uncalibrated_default_never_makes_a_row_ok() -> None:
    schema = schema_from_body({**BODY, "properties": {k: v for k, v in BODY["properties"].items()
                                                      if k != "category"}, "required": ["who", "amount"]},
                              "no_choice.json")  # fmt: skip
    pieces = (
        ("{", 0.0),
        ('"who": ', 0.0),
        ('"Maria"', 0.0),
        (', "amount": ', 0.0),
        ("42.8", 0.0),
        ("}", 0.0),
    )
    sure = judge(
        schema, TEXT, NOTES, Completion("".join(p for p, _ in pieces), "stop", 1, 1, 0.0, "s", pieces)
    )
    verdict = decide(schema, {"one-pass": sure}, Policy("uncalibrated"), {}, False)
    assert verdict.status == "partial" and verdict.data == {"who": "Maria", "amount": 42.8}
    assert verdict.errors[0].startswith(UNVOUCHED)


def test_measuring_drops_nothing_and_decides_nothing() -> None:
    first = read(who=(None, 0.5), amount=(3, 0.4), category=("travel", 0.5))
    verdict = decide(SCHEMA, {"two-pass": first}, Policy("measuring"), {"who": 7}, True)
    assert verdict.data == {"who": None, "amount": 3, "category": "travel"}
    assert verdict.status == "partial" and verdict.errors[0].startswith(UNVOUCHED)
    assert all(not t["certified"] and t["why"] == "measuring" for t in verdict.trust)
    assert verdict.trust[0]["offered"] == 7 and verdict.trust[0]["competes"] is True


def test_a_row_held_only_by_its_values_thresholds_is_marked_for_a_stronger_model() -> None:
    """Nothing a retry of the same model can change: no refusal, an answer given, only unsure values."""
    unsure = read(who=("Maria", 0.6), amount=(42.8, 0.99), category=("meals", 0.99))
    held = decide(SCHEMA, {"two-pass": unsure, "notes-free": unsure}, CALIBRATED, {}, False)
    assert held.status == "partial" and held.unsure_only
    refused = read(who=("Bob", 0.99), amount=(42.8, 0.99), category=("meals", 0.99))  # Bob: not in it
    fixable = decide(SCHEMA, {"two-pass": refused}, CALIBRATED, {}, False)
    assert fixable.status == "partial" and not fixable.unsure_only  # a retry told "Bob" is wrong may
    sure = read(who=("Maria", 0.99), amount=(42.8, 0.99), category=("meals", 0.99))
    assert not decide(SCHEMA, {"two-pass": sure, "notes-free": sure}, CALIBRATED, {}, False).unsure_only
