"""Built-in schemas load and lint clean; the lint catches each broken rule with a message that helps."""

from __future__ import annotations

import copy
import json

import pytest

from schemas.budget import format_budget
from schemas.lint import grammar_compile_error, lint_schema
from schemas.registry import SchemaProblem, builtin_names, load_schema


def test_four_builtin_schemas_are_versioned_and_have_critical_fields() -> None:
    assert builtin_names() == ["chat_tag", "contact", "expense", "shopping_list"]
    for name in builtin_names():
        schema = load_schema(name)
        assert schema.version >= 1
        assert schema.critical_fields, name
        assert grammar_compile_error(schema.body) is None


def test_builtin_enums_have_an_explicit_escape_value() -> None:
    for name in builtin_names():
        for key, node in load_schema(name).properties.items():
            if "enum" in node:
                assert "other" in node["enum"] or None in node["enum"], f"{name}.{key}"


def _expense() -> dict:
    return copy.deepcopy(load_schema("expense").body)


def _broken(change) -> dict:
    body = _expense()
    change(body)
    return body


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b["properties"]["who"].pop("maxLength"), "who: a free string needs maxLength"),
        (lambda b: b["required"].remove("project"), "list every property in required"),
        (lambda b: b.pop("additionalProperties"), "set additionalProperties to false"),
        (lambda b: b["properties"]["who"].pop("description"), "who: add a description"),
        (
            lambda b: b["properties"]["who"].update(type="string"),
            "who: a non-critical field must accept null",
        ),
        (lambda b: b["properties"]["who"].update({"not": {"const": "x"}}), "keyword 'not' is not enforced"),
        (lambda b: b["properties"]["who"].update(format="phone"), "format 'phone' has no length bound"),
        (lambda b: b["properties"]["date"].update(maxLength=10), "ignores maxLength beside format"),
        (
            lambda b: b["properties"]["who"].update(pattern="^[A-Z]"),
            "ignores maxLength beside format or pattern",
        ),
        (
            lambda b: b["properties"].update(
                tags={"type": "array", "items": {"enum": ["a"]}, "description": "t"}
            ),
            "tags: an array needs maxItems",
        ),
        (lambda b: b["properties"]["project"].update(uniqueItems=True), "'uniqueItems' cannot be used"),
    ],
)
def test_lint_names_the_broken_rule(change, message: str) -> None:
    problems = lint_schema(_broken(change))
    assert any(message in p for p in problems), problems


def test_unknown_schema_name_lists_the_builtins() -> None:
    with pytest.raises(SchemaProblem, match=r"unknown schema 'invoice'.*expense"):
        load_schema("invoice")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not readable JSON"),
        ('["a list"]', "must be a JSON object"),
        ('{"type": "object", "properties": {}, "x-version": 1}', 'add a "title"'),
        ('{"title": "t", "type": "object", "properties": {}}', '"x-version": 1'),
        ('{"title": "t", "x-version": 1, "type": 12}', "not a valid JSON Schema"),
    ],
)
def test_broken_schema_file_is_refused_with_a_reason(tmp_path, content: str, message: str) -> None:
    path = tmp_path / "mine.json"
    path.write_text(content)
    with pytest.raises(SchemaProblem, match=message):
        load_schema(path)


def test_user_schema_file_loads(tmp_path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({**_expense(), "title": "my_expense", "x-version": 3}))
    schema = load_schema(path)
    assert (schema.name, schema.version) == ("my_expense", 3)


def test_budget_grows_with_the_schema_and_stays_capped() -> None:
    small = format_budget(load_schema("chat_tag").body)
    body = _expense()
    body["properties"]["who"]["maxLength"] = 200
    assert format_budget(body) > format_budget(_expense())
    assert 50 < small <= 1024
    assert format_budget(load_schema("shopping_list").body) == 1024
