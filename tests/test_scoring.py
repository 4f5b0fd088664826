"""Scoring rules on hand-made cases, and the gold sets checked against their schemas."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from formwork.schemas.registry import load_schema, schema_from_body
from formwork.tasks.evaluation.scoring import compare, rule_for, score_record, summarise
from formwork.tasks.validate import Verdict


def _score(schema, record, gold, verdict):
    return score_record(schema, record, gold, verdict.status, verdict.data, verdict.nulled)


GOLD = Path(__file__).parent.parent / "examples" / "gold"
# fields whose gold must be written in the text as it stands (a quote, not a judgement)
QUOTED = {
    "expense": {"project"},
    "contact": {"name", "email", "phone", "organization"},
    "chat_tag": {"speaker"},
    "shopping_list": {"store"},
}


@pytest.mark.parametrize("name", sorted(QUOTED))
def test_gold_set_matches_its_schema(name: str) -> None:
    schema = load_schema(name)
    rows = [json.loads(line) for line in (GOLD / f"{name}.jsonl").read_text().splitlines()]
    assert len(rows) >= 40 and len({r["id"] for r in rows}) == len(rows)
    assert {r.get("meta", {}).get("lang", "en") for r in rows} - {"en"}, "needs another language"
    for row in rows:
        assert set(row["gold"]) <= set(schema.properties), row["id"]
        full = {key: None for key in schema.properties} | row["gold"]  # omitted fields: not scored
        if name == "chat_tag":
            full["reply"] = "ok"
        jsonschema.validate(full, schema.body, format_checker=jsonschema.FormatChecker())
        for key in QUOTED[name]:
            value = row["gold"].get(key)
            spaced = " ".join(row["text"].split())  # a name may break across a card's lines
            assert value is None or value in row["text"] or value in spaced, (row["id"], key, value)


@pytest.mark.parametrize(
    ("node", "rule"),
    [
        ({"type": ["string", "null"], "maxLength": 80}, "text"),
        ({"type": ["string", "null"], "maxLength": 160}, "fuzzy"),
        ({"type": "number"}, "number"),
        ({"type": "integer"}, "number"),
        ({"type": ["string", "null"], "format": "date"}, "date"),
        ({"enum": ["a", "b", None]}, "enum"),
        ({"type": "string", "maxLength": 20, "x-match": "exact"}, "exact"),
    ],
)
def test_rule_follows_the_schema_and_x_match_overrides(node: dict, rule: str) -> None:
    assert rule_for(node) == rule


def test_unknown_x_match_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="x-match 'loose'"):
        rule_for({"type": "string", "x-match": "loose"})


SHORT = {"type": "string", "maxLength": 60}
LONG = {"type": "string", "maxLength": 400}
NUMBER = {"type": "number"}
DATE = {"type": ["string", "null"], "format": "date"}


@pytest.mark.parametrize(
    ("node", "gold", "got", "same"),
    [
        (SHORT, "Jane  Morrison", " jane morrison", True),  # case and spaces normalised
        (SHORT, "Jane Morrison", "Jane Morison", False),  # a short string must be exact
        ({**SHORT, "x-match": "exact"}, "Jane", "jane", False),  # x-match overrides normalising
        ({**SHORT, "x-match": "fuzzy"}, "Jane Morrison", "Jane Morison", True),
        (
            LONG,
            "Thanks so much, I am really glad to hear that!",
            "Thanks so much, I'm really glad to hear that!",
            True,
        ),
        (LONG, "Thanks so much, I am really glad to hear that!", "Please send the invoice today.", False),
        (
            {**LONG, "x-match-threshold": 99},
            "I am really glad to hear that",
            "I'm really glad to hear that",
            False,
        ),
        (NUMBER, 42.8, 42.80, True),
        (NUMBER, 42.8, "42.80", True),  # a numeric string is the same number
        (NUMBER, 5.86, 1.5, False),
        (NUMBER, 1299, 1299.004, True),  # within the default tolerance
        ({**NUMBER, "x-match-tolerance": 1.0}, 100, 100.9, True),
        (NUMBER, 1, True, False),  # a boolean is not a number
        (DATE, "2020-03-03", "March 3rd 2020", True),  # same day, another written form
        (DATE, "2020-03-03", "3 mars 2020", True),
        (DATE, "2020-03-03", "3022-03-03", False),
        (DATE, "2024-05-14", "not a date", False),
        ({"enum": ["USD", "EUR"]}, "USD", "USD", True),
        ({"enum": ["USD", "EUR"]}, "USD", "usd", False),  # enums are exact
        (SHORT, None, None, True),
        (SHORT, None, "Tom", False),
        (SHORT, "Tom", None, False),
    ],
)
def test_comparison_rules(node: dict, gold: object, got: object, same: bool) -> None:
    assert compare(node, gold, got) is same


ITEMS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 60}, "quantity": {"type": "integer"}},
    },
}


@pytest.mark.parametrize(
    ("got", "same"),
    [
        ([{"name": "Apple", "quantity": 2}, {"name": "milk ", "quantity": 1}], True),
        ([{"name": "milk", "quantity": 1}, {"name": "apple", "quantity": 2}], False),  # order matters
        ([{"name": "apple", "quantity": 2}], False),  # one missing
        ([{"name": "apple", "quantity": 3}, {"name": "milk", "quantity": 1}], False),
        ("apple, milk", False),
    ],
)
def test_arrays_compare_element_wise(got: object, same: bool) -> None:
    gold = [{"name": "apple", "quantity": 2}, {"name": "milk", "quantity": 1}]
    assert compare(ITEMS, gold, got) is same


@pytest.fixture
def expense():
    return load_schema("expense")


GOLD_ROW = {"who": "Maria", "date": "2024-03-14", "amount": 42.8, "currency": "USD"}
RIGHT = {"who": "maria", "date": "2024-03-14", "amount": 42.80, "currency": "USD", "category": "meals",
         "project": None}  # fmt: skip


def test_the_four_outcomes(expense) -> None:
    cases = {
        "no_json": Verdict("failed", None, ["no JSON came back"]),
        "schema_mismatch": Verdict(
            "partial", {**RIGHT, "date": None}, ["date: bad"], ["date"], ["date: bad"]
        ),
        "content_wrong": Verdict("ok", {**RIGHT, "amount": 1.5}),
        "all_correct": Verdict("ok", RIGHT),
    }
    scores = [_score(expense, name, GOLD_ROW, verdict) for name, verdict in cases.items()]
    assert [s.outcome for s in scores] == list(cases)
    assert scores[2].fields == {"who": True, "date": True, "amount": False, "currency": True}
    assert not any(scores[0].fields.values())  # no JSON: every scored field is wrong


def test_summary_counts_accuracy_confusion_share_and_precision_of_ok(expense) -> None:
    verdicts = [
        Verdict("ok", RIGHT),
        Verdict("ok", {**RIGHT, "amount": 1.5, "currency": "EUR"}),  # ok, but wrong: hurts precision
        Verdict("failed", None, ["no JSON"]),
        Verdict("ok", RIGHT),
    ]
    golds = [GOLD_ROW] * 3 + [{"currency": "USD"}]  # the last gold scores one field only
    scores = [_score(expense, str(i), g, v) for i, (g, v) in enumerate(zip(golds, verdicts, strict=True))]
    report = summarise(expense, scores, golds)
    assert report.outcomes == {"no_json": 1, "schema_mismatch": 0, "content_wrong": 1, "all_correct": 2}
    assert report.field_accuracy == {"who": 2 / 3, "date": 2 / 3, "amount": 1 / 3, "currency": 2 / 4}
    assert report.confusion["currency"] == {"USD": {"USD": 2, "EUR": 1, "∅": 1}}
    assert "category" not in report.confusion  # no gold names it
    assert report.share_ok == 3 / 4
    assert report.precision_ok == pytest.approx(2 / 3)
    assert json.loads(json.dumps(report.as_dict()))["precision_ok"] == pytest.approx(2 / 3)


def test_stated_accuracy_leaves_out_the_fields_whose_gold_is_null(expense) -> None:
    """A field right only because its gold is null and the row left it null (a refused invention, say)
    is counted in field_accuracy, never in stated_accuracy."""
    golds = [{**GOLD_ROW, "who": None}, GOLD_ROW, GOLD_ROW]
    verdicts = [
        Verdict("ok", {**RIGHT, "who": None}),
        Verdict("ok", {**RIGHT, "who": None}),
        Verdict("ok", RIGHT),
    ]
    scores = [_score(expense, str(i), g, v) for i, (g, v) in enumerate(zip(golds, verdicts, strict=True))]
    report = summarise(expense, scores, golds)
    assert report.field_accuracy["who"] == 2 / 3 and report.stated_accuracy["who"] == 1 / 2
    assert report.stated_accuracy["amount"] == report.field_accuracy["amount"] == 1.0


def test_gold_naming_an_unknown_field_is_refused(expense) -> None:
    with pytest.raises(ValueError, match="colour"):
        _score(expense, "r1", {"colour": "red"}, Verdict("ok", RIGHT))


def test_x_match_in_a_user_schema_changes_the_score() -> None:
    body = {
        "title": "code",
        "x-version": 1,
        "type": "object",
        "properties": {
            "code": {
                "type": ["string", "null"],
                "maxLength": 20,
                "x-match": "exact",
                "description": "The code.",
            }
        },
        "required": ["code"],
        "additionalProperties": False,
    }
    schema = schema_from_body(body, "inline")
    score = _score(schema, "r1", {"code": "AB-1"}, Verdict("ok", {"code": "ab-1"}))
    assert score.outcome == "content_wrong"


def test_stored_data_that_breaks_the_schema_is_a_mismatch_even_unnulled(expense) -> None:
    broken = {**RIGHT, "currency": "dollars"}  # a failed row keeps the invalid data it got
    score = score_record(expense, "r1", GOLD_ROW, "failed", broken)
    assert score.outcome == "schema_mismatch"
    assert score.fields["currency"] is False
