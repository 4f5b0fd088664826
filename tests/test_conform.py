"""The user's own schema, both ways: what comes back validates against the body as written (issue 21).

Outputs are written the way the grammar writes them (every key present, `null` for absent) and judged
by the real `judge`; the data must then satisfy the user's own validator and Pydantic class.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from jsonschema import validators
from pydantic import BaseModel, Field

from formwork.flows.api import _as_row, extract, resolve_schema
from formwork.flows.review import ReviewItem, render_review
from formwork.schemas.pydantic_source import class_body
from formwork.schemas.registry import schema_from_body
from formwork.tasks.calls import Outcome
from formwork.tasks.engines.base import Completion
from formwork.tasks.validate import Verdict, as_written, judge


class Order(BaseModel):
    """A shop order, with the defaults a user's model has."""

    item: str = Field(max_length=40)
    quantity: int = 1
    gift: bool = False
    size: Literal["S", "M", "L"] | None = None


def done(text: str) -> Completion:
    return Completion(text, "stop", 10, 10, 0.1, "test")  # type: ignore[arg-type]


def judged(schema: Any, data: dict[str, Any], source: str) -> Verdict:
    return judge(schema, source, done("notes"), done(json.dumps(data)))


def test_a_pydantic_default_is_the_value_when_the_grammar_said_absent() -> None:
    schema = schema_from_body(class_body(Order, "Order"), "Order")
    verdict = judged(schema, {"item": "teapot", "quantity": None, "gift": None, "size": None}, "One teapot")
    assert verdict.status == "ok", verdict.errors
    assert verdict.data == {"item": "teapot", "quantity": 1, "gift": False, "size": None}
    assert Order.model_validate(verdict.data) == Order(item="teapot")  # failed before: "a valid integer"
    kinds = {row["path"]: (row["kind"], row["value"]) for row in verdict.evidence}
    assert kinds["quantity"] == ("default", 1) and kinds["gift"] == ("default", False)
    assert "size" not in kinds  # null is a value Order allows: kept, neither absent nor defaulted


DRAFT4 = {
    "$schema": "http://json-schema.org/draft-04/schema#",
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 30},
        "nick": {"type": "string", "maxLength": 30},
        "lines": {
            "type": "array",
            "maxItems": 4,
            "items": {
                "type": "object",
                "properties": {"what": {"type": "string", "maxLength": 20}, "qty": {"type": "integer"}},
                "required": ["what"],
            },
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}


def test_an_absent_value_the_schema_cannot_hold_as_null_is_dropped_and_listed() -> None:
    schema = schema_from_body(DRAFT4, "<dict>")
    output = {"name": "Ada", "nick": None, "lines": [{"what": "pens", "qty": None}]}
    verdict = judged(schema, output, "Ada ordered pens")
    assert verdict.status == "ok", verdict.errors
    assert verdict.data == {"name": "Ada", "lines": [{"what": "pens"}]}
    validators.validator_for(DRAFT4)(DRAFT4).validate(verdict.data)  # the user's validator, as shipped
    assert not validators.validator_for(DRAFT4)(DRAFT4).is_valid(output)  # what was stored before
    absent = sorted(row["path"] for row in verdict.evidence if row["kind"] == "absent")
    assert absent == ["lines[0].qty", "nick"]


def test_a_non_object_root_is_conformed_inside_its_wrapper() -> None:
    item = {"tag": {"type": "string", "maxLength": 10}, "weight": {"type": "number", "default": 1.0}}
    body = {"type": "array", "maxItems": 3, "items": {"type": "object", "properties": item}}
    verdict = judged(schema_from_body(body, "<dict>"), {"value": [{"tag": "red", "weight": None}]}, "red")
    assert verdict.status == "ok", verdict.errors
    assert verdict.data == {"value": [{"tag": "red", "weight": 1.0}]}
    assert [r["path"] for r in verdict.evidence if r["kind"] == "default"] == ["value[0].weight"]


def test_a_key_presence_rule_reads_a_grammar_null_as_absent() -> None:
    """`x` is optional where it is declared, so the checked body lets it be null, but an allOf sibling
    requires it: the null is read as absent, so the row fails validation like any missing key."""
    body = {"type": "object", "allOf": [{"properties": {"x": {"type": "string", "maxLength": 9}}},
                                        {"required": ["x"]}]}  # fmt: skip
    schema = schema_from_body(body, "<dict>")
    verdict = judged(schema, {"x": None}, "nothing here")
    assert (verdict.status, verdict.errors) == ("failed", ["(root): 'x' is a required property"])
    either = {"a": {"type": "string", "maxLength": 5}, "b": {"type": "integer"}}
    one_of = {"type": "object", "properties": either, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    verdict = judged(schema_from_body(one_of, "<dict>"), {"a": "pens", "b": None}, "pens")
    assert (verdict.status, verdict.data) == ("ok", {"a": "pens"})  # failed before: "valid under each of"


def test_a_row_the_schema_as_written_refuses_is_never_stored_as_valid() -> None:
    """The safety net behind the checked body: a verdict whose data the body as written refuses fails."""
    body = {"type": "object", "allOf": [{"properties": {"x": {"type": "string"}}}, {"required": ["x"]}]}
    verdict = as_written(schema_from_body(body, "<dict>"), Verdict("ok", {"x": None}))
    why = "'x' is a required property (the schema as written refuses the output once its absent values"
    assert verdict.status == "failed" and any(why in e for e in verdict.errors), verdict.errors


@pytest.mark.parametrize(
    ("fmt", "bad", "good"),
    [
        ("date", "not-a-date", "2024-03-14"),
        ("iri", "not an iri", "https://例え.jp/パス"),
        ("uuid", "1234", "12345678-1234-5678-1234-567812345678"),
        ("time", "25:00", "10:20:30Z"),
    ],
)
def test_every_format_is_checked_whatever_the_draft(fmt: str, bad: str, good: str) -> None:
    body = {**DRAFT4, "properties": {"name": {"type": "string", "format": fmt}}}
    schema = schema_from_body(body, "<dict>")
    assert not schema.validator.is_valid({"name": bad})
    assert schema.validator.is_valid({"name": good})


def test_a_dict_without_a_title_is_named_by_its_content() -> None:
    body = {"type": "object", "properties": {"topic": {"enum": ["a", "b"]}}}
    first, again = resolve_schema(body), resolve_schema(dict(body))
    assert first.name == again.name and first.name.startswith("schema-") and len(first.name) == 19
    assert resolve_schema({**body, "required": ["topic"]}).name != first.name


def test_one_bare_string_is_refused_not_read_as_characters() -> None:
    with pytest.raises(TypeError, match="list of texts"):
        extract("Taxi 42.80 EUR", schema=Order)  # type: ignore[arg-type]


def outcome(status: str, data: dict[str, Any]) -> Outcome:
    return Outcome(1, Verdict(status, data, ["amount 999.0 does not appear in the text"]), 1)  # type: ignore[arg-type]


FIELDS = ["item", "quantity", "gift", "size"]


def test_a_failed_row_carries_no_model_instance() -> None:
    answer = {"item": "teapot", "quantity": 999}
    failed = _as_row("One teapot", outcome("failed", answer), Order, "", FIELDS, None)
    assert failed.status == "failed" and failed.model is None and failed.data is None
    assert failed.unchecked == {"item": "teapot", "quantity": 999}  # the answer is kept, apart from data
    partial = _as_row("One teapot", outcome("partial", {"item": "teapot", "quantity": 1}), Order, "", FIELDS,
                      None)  # fmt: skip
    assert partial.model == Order(item="teapot")


def test_the_review_page_marks_absent_and_defaulted_values() -> None:
    schema = schema_from_body(class_body(Order, "Order"), "Order")
    verdict = judged(schema, {"item": "teapot", "quantity": None, "gift": None, "size": None}, "One teapot")
    dropped = judged(schema_from_body(DRAFT4, "<dict>"), {"name": "Ada", "nick": None, "lines": None}, "Ada")
    items = [
        ReviewItem(key, "One teapot", v.status, v.data, v.errors, v.nulled, "stop", "stop", v.evidence)
        for key, v in (("r1", verdict), ("r2", dropped))
    ]
    page = render_review(items, "run 1")
    assert 'quantity</b>: 1 <span class="def">(default)</span>' in page
    assert 'nick</b>: <i class="def">absent</i>' in page
