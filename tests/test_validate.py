"""The status rules, on formatter outputs written out by hand: ok, partial (nulled, listed), failed."""

from __future__ import annotations

import json

import pytest

from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.validate import judge

EXPENSE = load_schema("expense")
CONTACT = load_schema("contact")
GOOD = {
    "who": "Maria",
    "date": "2024-03-14",
    "amount": 42.8,
    "currency": "USD",
    "category": "meals",
    "project": None,
}
SOURCE = "Lunch 2024-03-14, $42.80, Maria"


def done(text: str, finish: str = "stop") -> Completion:
    return Completion(text, finish, 10, 10, 0.1, "test")  # type: ignore[arg-type]


def verdict(data, finish: str = "stop", reasoning_finish: str = "stop", schema=EXPENSE, source=SOURCE):
    text = data if isinstance(data, str) else json.dumps(data)
    return judge(schema, source, done("notes", reasoning_finish), done(text, finish))


def test_valid_output_is_ok() -> None:
    result = verdict(GOOD)
    assert (result.status, result.data, result.errors) == ("ok", GOOD, [])


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"date": "2024-02-31"}, "date", "is not a 'date'"),
        ({"category": "snacks"}, "category", "'snacks' is not one of"),
        ({"who": "x" * 81}, "who", "is too long"),
    ],
)
def test_a_bad_non_critical_field_is_nulled_and_listed(change: dict, field: str, message: str) -> None:
    result = verdict({**GOOD, **change})
    assert result.status == "partial"
    assert result.nulled == [field] and result.data[field] is None
    assert any(message in e for e in result.errors), result.errors
    assert {k: v for k, v in result.data.items() if k != field} == {
        k: v for k, v in GOOD.items() if k != field
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"amount": "42.80"}, "amount: '42.80' is not of type 'number'"),
        ({"currency": "dollars"}, "currency: 'dollars' is not one of"),
        ({"amount": -3}, "amount: -3 is less than the minimum of 0"),
    ],
)
def test_a_bad_critical_field_fails_the_record(change: dict, message: str) -> None:
    result = verdict({**GOOD, **change})
    assert result.status == "failed"
    assert any(e.startswith(message) for e in result.errors), result.errors


def test_missing_key_or_extra_key_fails() -> None:
    missing = {k: v for k, v in GOOD.items() if k != "who"}
    assert verdict(missing).status == "failed"
    assert "'who' is a required property" in verdict(missing).errors[0]
    assert verdict({**GOOD, "tip": 3}).status == "failed"


def test_no_json_fails_with_the_finish_reason() -> None:
    result = verdict('{"who": "Ma', finish="length")
    assert result.status == "failed" and result.data is None
    assert "no JSON came back" in result.errors[0] and "finish=length" in result.errors[0]


@pytest.mark.parametrize("which", ["reasoning", "formatting"])
def test_a_pass_cut_at_length_fails_even_with_valid_json(which: str) -> None:
    finishes = {"finish": "length"} if which == "formatting" else {"reasoning_finish": "length"}
    result = verdict(GOOD, **finishes)
    assert result.status == "failed" and result.data == GOOD
    assert result.errors == [f"{which} pass stopped at length after 10 tokens"]


def test_semantic_checks_catch_what_no_grammar_can() -> None:
    contact = {"name": "Jane", "email": "jane.doe@example.com", "phone": "+1 555 0100", "organization": None}
    copied = verdict(contact, schema=CONTACT, source="Jane, call me")
    assert copied.status == "partial" and copied.nulled == ["email", "phone"]
    assert any("is the schema's example" in e for e in copied.errors)
    genuine = verdict(contact, schema=CONTACT, source="Jane jane.doe@example.com +1 555 0100")
    assert genuine.status == "ok"
    odd = verdict({**contact, "email": "jane@localhost", "phone": None}, schema=CONTACT, source="Jane x")
    assert odd.status == "partial" and "does not look like an e-mail" in odd.errors[0]
