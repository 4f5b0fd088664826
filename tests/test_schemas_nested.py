"""Nested objects and lists of entities: validation, nulling and statuses per element and path."""

from __future__ import annotations

import copy
import json

import pytest

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import load_schema, schema_from_body
from formwork.tasks.engines.base import Completion, Sampling
from formwork.tasks.prompts import field_guide, formatting_messages
from formwork.tasks.validate import judge

RECEIPT = load_schema("receipt")
GOOD = {
    "merchant": "Cafe Luna",
    "date": "2024-05-02",
    "total": 7.5,
    "currency": "EUR",
    "items": [
        {"description": "Espresso", "quantity": 2, "amount": 5.0},
        {"description": "Croissant", "quantity": 1, "amount": 2.5},
    ],
}
TEXT = "CAFE LUNA 2024-05-02\n2x Espresso 5.00\n1x Croissant 2.50\nTOTAL EUR 7.50"


def done(text: str, finish: str = "stop") -> Completion:
    return Completion(text, finish, 10, 10, 0.1, "test")  # type: ignore[arg-type]


def verdict(data: dict, schema=RECEIPT, source: str = TEXT):
    return judge(schema, source, done("notes"), done(json.dumps(data)))


def changed(**paths) -> dict:
    data = copy.deepcopy(GOOD)
    for path, value in paths.items():
        index, key = path.split("_")
        data["items"][int(index)][key] = value
    return data


def test_the_receipt_schema_passes_the_lint_and_is_ok_when_valid() -> None:
    assert load_schema("receipt", strict=True).normalised.changed == []
    assert verdict(GOOD).status == "ok"


def test_a_bad_field_in_one_line_item_is_nulled_at_its_path() -> None:
    result = verdict(changed(**{"1_amount": -3}))
    assert result.status == "partial" and result.nulled == ["items[1].amount"]
    assert result.data["items"][1] == {"description": "Croissant", "quantity": 1, "amount": None}
    assert result.data["items"][0] == GOOD["items"][0]
    assert any(e.startswith("items[1].amount: -3 is less than the minimum") for e in result.errors), (
        result.errors
    )


def test_a_broken_element_that_cannot_be_nulled_fails_the_record() -> None:
    data = copy.deepcopy(GOOD)
    del data["items"][0]["amount"]  # the element itself is wrong; `items` is critical
    result = verdict(data)
    assert result.status == "failed" and any("items[0]" in e for e in result.errors)


def test_an_email_inside_array_items_is_checked_at_its_path() -> None:
    """Issue 7 point 17: `x-format: email` on array items used to be never checked."""
    body = {
        "title": "thread",
        "type": "object",
        "properties": {
            "people": {
                "type": "array",
                "maxItems": 5,
                "items": {
                    "type": "object",
                    "properties": {
                        "email": {"type": ["string", "null"], "maxLength": 60, "x-format": "email"}
                    },
                },
            }
        },
    }
    schema = schema_from_body(body, "thread.json")
    people = {"people": [{"email": "a@b.io"}, {"email": "not-an-email"}]}
    result = verdict(people, schema=schema, source="write to a@b.io or not-an-email")
    assert result.status == "partial" and result.nulled == ["people[1].email"]
    assert result.data["people"] == [{"email": "a@b.io"}, {"email": None}]


def test_a_wrapped_root_validates_under_its_one_field() -> None:
    schema = schema_from_body({"title": "tags", "type": "array", "items": {"enum": ["a", "b"]}}, "tags.json")
    assert verdict({"value": ["a", "b"]}, schema=schema).status == "ok"
    assert verdict({"value": ["c"]}, schema=schema).status == "failed"  # the wrapper's field is critical


def test_the_field_guide_describes_the_line_items() -> None:
    guide = field_guide(RECEIPT)
    assert "- items (array of {description, quantity, amount})" in guide
    assert "  - items[].amount (number, or null): The line's price" in guide


@pytest.mark.slow
def test_a_receipt_through_the_embedded_model_is_valid_json_with_a_status(local_engine) -> None:
    budget = format_budget(RECEIPT.grammar_body)
    shaped = local_engine.complete(
        formatting_messages(RECEIPT, TEXT, notes=TEXT), Sampling(budget), RECEIPT.grammar_body
    )
    assert shaped.finish_reason == "stop", shaped
    data = json.loads(shaped.text)
    assert isinstance(data["items"], list) and len(data["items"]) <= 20
    result = judge(RECEIPT, TEXT, done("notes"), shaped)
    assert result.status in ("ok", "partial", "failed")
    if result.status != "failed":
        assert not list(RECEIPT.validator.iter_errors(result.data))
