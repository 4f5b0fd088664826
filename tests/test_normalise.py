"""The normaliser on small schemas as users write them: each rule changed and reported, or refused."""

from __future__ import annotations

import json

import pytest

from formwork.schemas.lint import grammar_compile_error
from formwork.schemas.normalise import NormaliseProblem, normalise
from formwork.schemas.registry import SchemaProblem, load_schema, schema_from_body


def obj(**properties: dict) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


NAME = {"type": "string", "maxLength": 20}


def test_an_optional_property_becomes_required_and_nullable() -> None:
    report = normalise({"type": "object", "properties": {"a": NAME, "b": NAME}, "required": ["a"]})
    assert report.grammar["required"] == ["a", "b"] and report.checked["required"] == ["a"]
    assert report.checked["properties"]["b"]["type"] == ["string", "null"]
    assert report.grammar["additionalProperties"] is False
    assert any("optional ['b'] made required and nullable" in c for c in report.changed)
    assert any("additionalProperties false added" in c for c in report.changed)


def test_free_strings_and_arrays_get_a_bound_that_is_reported() -> None:
    report = normalise(obj(tags={"type": "array", "items": {"type": "string"}}))
    tags = report.grammar["properties"]["tags"]
    assert tags["maxItems"] == 20 and tags["items"]["maxLength"] == 256
    assert [c.split(":")[0] for c in report.changed] == ["#/properties/tags/items", "#/properties/tags"]
    assert "maxItems" not in report.checked["properties"]["tags"]  # the user's constraints, unchanged


def test_a_root_that_is_not_an_object_is_wrapped_in_one_field() -> None:
    report = normalise({"type": "array", "items": NAME, "maxItems": 3})
    assert report.checked["properties"]["value"]["type"] == "array"
    assert report.checked["required"] == ["value"] and "wrapped" in report.changed[0]


def test_local_refs_in_defs_and_definitions_are_inlined() -> None:
    body = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Name"}, "b": {"$ref": "#/definitions/Kind"}},
        "required": ["a", "b"],
        "additionalProperties": False,
        "$defs": {"Name": NAME},
        "definitions": {"Kind": {"enum": ["x", "y"]}},
    }
    report = normalise(body)
    assert report.checked["properties"] == {"a": NAME, "b": {"enum": ["x", "y"]}}
    assert "$defs" not in report.grammar and grammar_compile_error(report.grammar) is None


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            "https://example.com/name.json",
            "#/properties/a: $ref 'https://example.com/name.json' points outside",
        ),
        ("other.json#/Name", "points outside this file"),
        ("#/$defs/Missing", "points at nothing"),
        ("#/$defs/Node", "is recursive"),
    ],
)
def test_remote_dangling_and_recursive_refs_are_refused_with_the_pointer(ref: str, message: str) -> None:
    node = {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}
    body = {"type": "object", "properties": {"a": {"$ref": ref}}, "$defs": {"Node": node}}
    with pytest.raises(NormaliseProblem) as caught:
        normalise(body)
    assert message in str(caught.value)


def test_annotation_keywords_are_ignored_not_refused() -> None:
    noisy = {**NAME, "id": "x", "readOnly": True, "writeOnly": False, "deprecated": True, "$comment": "c",
             "javaType": "com.x.Name", "x-vendor": 1, "examples": ["a"], "default": "a"}  # fmt: skip
    report = normalise({"$schema": "http://json-schema.org/draft-07/schema#", "id": "urn:x", **obj(a=noisy)})
    assert report.grammar["properties"]["a"] == {"type": "string", "maxLength": 20}
    assert report.checked_after == [] and report.changed == []


@pytest.mark.parametrize(
    ("node", "keyword"),
    [
        ({"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2, "uniqueItems": True}, "uniqueItems"),
        ({**NAME, "not": {"const": "x"}}, "not"),
        ({"type": "string", "format": "email", "maxLength": 40}, "format 'email'"),
        (
            {"type": "string", "pattern": "^a{1,4}$", "maxLength": 4},
            "maxLength/minLength beside format or pattern",
        ),
        ({"type": "array", "maxItems": 3, "items": {**NAME, "x-format": "email"}}, "x-format 'email'"),
        ({**obj(a=NAME), "minProperties": 1}, "minProperties"),
        ({**obj(a=NAME), "if": {"required": ["a"]}, "then": {}}, "if"),
        ({**obj(a=NAME), "allOf": [{"if": {"required": ["a"]}, "then": {}}]}, "allOf/0: then"),
    ],
)
def test_keywords_the_grammar_drops_are_reported_as_checked_after(node: dict, keyword: str) -> None:
    report = normalise(obj(a=node))
    assert any(keyword in line and "checked after, not enforced" in line for line in report.checked_after)
    assert grammar_compile_error(report.grammar) is None
    assert report.checked["properties"]["a"] == node  # the user's constraint stays, validated after


@pytest.mark.parametrize("pattern", [".*", "^[A-Z]+-\\d+$", "x{2,}", "(ab|c)*d"])
def test_an_unbounded_pattern_never_reaches_the_grammar_unbounded(pattern: str) -> None:
    """Issue 20 point 5: `.*` passed the lint and reached XGrammar, which ignores maxLength beside it."""
    from formwork.schemas.budget import format_budget
    from formwork.schemas.lint import lint_schema

    body = obj(a={"type": "string", "pattern": pattern, "maxLength": 30, "description": "a"})
    grammar = normalise(body).grammar["properties"]["a"]
    assert grammar == {"type": "string", "maxLength": 30}  # bounded; the pattern is checked after
    assert any("has no length bound" in p for p in lint_schema(body))
    assert format_budget(normalise(body).grammar) < 200
    bounded = obj(a={"type": "string", "pattern": "^[A-Z]{2,5}-\\d{1,6}$", "description": "a"})
    assert normalise(bounded).grammar["properties"]["a"]["pattern"] == "^[A-Z]{2,5}-\\d{1,6}$"
    assert lint_schema(bounded) == []


def test_all_of_is_merged_for_the_grammar_and_a_clash_is_refused() -> None:
    merged = normalise(obj(n={"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 5}]}))
    assert merged.grammar["properties"]["n"] == {"type": "integer", "minimum": 0, "maximum": 5}
    with pytest.raises(NormaliseProblem, match=r"#/properties/n: allOf parts clash"):
        normalise(obj(n={"allOf": [{"type": "integer"}, {"type": "string"}]}))


def test_draft_04_bounds_and_ids_load() -> None:
    body = {"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://x/y.json", "title": "old",
            **obj(n={"type": "number", "maximum": 5, "exclusiveMaximum": True})}  # fmt: skip
    schema = schema_from_body(body, "old.json")
    assert schema.grammar_body["properties"]["n"] == {"type": "number", "exclusiveMaximum": 5}
    assert list(schema.validator.iter_errors({"n": 5}))  # still checked after, as draft-04 means it


def test_strict_refuses_instead_of_normalising() -> None:
    body = {"title": "t", "type": "object", "properties": {"a": {"type": "string"}}}
    with pytest.raises(SchemaProblem, match=r"(?s)free string got maxLength.*--strict"):
        schema_from_body(body, "t.json", strict=True)
    assert schema_from_body(body, "t.json").grammar_body["properties"]["a"]["maxLength"] == 256


def test_remote_ref_is_refused_at_load_not_at_each_record(tmp_path) -> None:
    """Issue 7 point 17: a remote $ref used to pass the lint, then fail every record."""
    path = tmp_path / "remote.json"
    path.write_text(json.dumps(obj(a={"$ref": "https://example.com/a.json"})))
    with pytest.raises(SchemaProblem, match="points outside this file"):
        load_schema(path)
