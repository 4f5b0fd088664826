"""A quoted "null" is the model's null (issue 27): offered by the grounded grammar, read as null by the
judge, weighed as the null it means, and never where the field cannot be null or is no quote."""

from __future__ import annotations

import json
import math

import pytest

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines.base import Completion
from formwork.tasks.grounding.absent import SPELLINGS, absent, read_absent
from formwork.tasks.grounding.candidates import grounded_body
from formwork.tasks.validate import judge

EXPENSE = load_schema("expense")
KEYBOARD = "Bought a new keyboard for the office: £59.99 on 12 Jan 2024"
RIGHT = {"who": None, "date": "2024-01-12", "amount": 59.99, "currency": "GBP", "category": "office",
         "project": None}  # fmt: skip


def written(data: dict, sure: float = math.log(0.9)) -> Completion:
    """A formatting output whose every token is one character with log-probability `sure`."""
    text = json.dumps(data, ensure_ascii=False)
    pieces = tuple((ch, sure) for ch in text)
    return Completion(text, "stop", 1, len(text), 0.1, "m", token_logprobs=pieces)


@pytest.mark.parametrize("spelling", ["null", "None", "N/A", " unknown ", "not mentioned", ""])
def test_a_quoted_spelling_of_none_is_the_fields_null(spelling: str) -> None:
    verdict = judge(EXPENSE, KEYBOARD, written({}), written({**RIGHT, "who": spelling}))
    assert verdict.status == "ok" and verdict.data["who"] is None, verdict.errors
    who = next(v for v in verdict.values if v["path"] == "who")
    # weighed as a null: the probability of the tokens that wrote it ("null" in quotes: 6 characters)
    chars = len(json.dumps(spelling))
    assert who["verdict"] == "null" and who["confidence"] == pytest.approx(0.9**chars, rel=1e-3)


def test_a_real_value_or_a_name_that_contains_the_word_is_no_null() -> None:
    text = "Taxi 2024-01-12, 12 EUR, paid by Nonna Maria"
    data = {**RIGHT, "who": "Nonna Maria", "amount": 12, "currency": "EUR", "category": "transport"}
    assert judge(EXPENSE, text, written({}), written(data)).data["who"] == "Nonna Maria"
    assert not absent("Nonna") and not absent(None) and not absent(0)


NULLABLE = {"type": ["string", "null"]}
BODY = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},  # cannot be null: "None" stays a string the judge must find
        "label": {"enum": ["none", "some", None]},  # a label, not a quote
        "note": {**NULLABLE, "x-grounding": "none"},  # a free note, not a quote
        "extra": {"type": "object", "x-grounding": "none", "properties": {"who": NULLABLE}},
        "who": NULLABLE,
        "items": {"type": "array", "items": {"type": "object", "properties": {"by": NULLABLE}}},
    },
}


def test_only_nullable_quote_fields_read_a_spelling_as_null() -> None:
    data = {"name": "None", "label": "none", "note": "n/a", "extra": {"who": "null"}, "who": "N/A",
            "items": [{"by": "Ann"}, {"by": "null"}]}  # fmt: skip
    read = read_absent(BODY, data)
    assert read == {**data, "who": None, "items": [{"by": "Ann"}, {"by": None}]}
    assert data["who"] == "N/A"  # the model's output is not changed in place
    assert read_absent(BODY, {"who": "Ann"}) == {"who": "Ann"}


def test_the_grounded_grammar_lets_an_opened_quote_say_none() -> None:
    """The 1.5B wrote `"who": "null"`; grounding on, the quote it opened had to become a span of the
    text ("Bought a new keyboard for the office", a wrong value)."""
    fields = ExtractOptions(grounded_decoding=True).formatting_grammar(EXPENSE, KEYBOARD, None)["properties"]
    for name in ("who", "project"):
        assert fields[name]["enum"][-len(SPELLINGS) - 1 :] == [None, *SPELLINGS]
    assert not set(SPELLINGS) & set(fields["category"]["enum"])  # an enum keeps its labels
    assert not any(isinstance(v, str) for v in fields["date"]["enum"] if v not in ("2024-01-12",))
    strict = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40}}}
    assert not set(SPELLINGS) & set(grounded_body(strict, KEYBOARD)["properties"]["name"]["enum"])
