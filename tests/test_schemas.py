"""Built-in schemas load and lint clean; the lint catches each broken rule with a message that helps."""

from __future__ import annotations

import copy
import json

import pytest

from formwork.schemas.budget import format_budget
from formwork.schemas.lint import grammar_compile_error, lint_schema
from formwork.schemas.registry import SchemaProblem, builtin_names, load_schema


def test_builtin_schemas_are_versioned_and_have_critical_fields() -> None:
    assert builtin_names() == ["chat_tag", "contact", "expense", "receipt", "shop_receipt", "shopping_list"]
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
        (lambda b: b["properties"]["who"].pop("maxLength"), "#/properties/who: a free string got maxLength"),
        (lambda b: b["required"].remove("project"), "optional ['project'] made required and nullable"),
        (lambda b: b.pop("additionalProperties"), "additionalProperties false added"),
        (lambda b: b["properties"]["who"].pop("description"), "#/properties/who: add a description"),
        (lambda b: b["properties"]["who"].update({"x-format": "phone"}), "x-format 'phone' is unknown"),
        (
            lambda b: b["properties"].update(
                tags={"type": "array", "items": {"enum": ["a"]}, "description": "t"}
            ),
            "#/properties/tags: an array got maxItems 20",
        ),
    ],
)
def test_lint_names_what_the_author_should_write(change, message: str) -> None:
    problems = lint_schema(_broken(change))
    assert any(message in p for p in problems), problems


def test_builtins_need_no_change_and_keep_their_identity() -> None:
    """Strict mode refuses any change, so the built-ins load strictly: same body, version and digest."""
    for name in builtin_names():
        schema = load_schema(name, strict=True)
        # chat_tag v3: emotion's x-min-confidence per model; expense v2: currency's x-aliases, v3: what
        # each category holds; contact v2: phone's pattern; shop_receipt v2: company, address, total
        # guides, v3: dates day first
        version = {"chat_tag": 3, "expense": 3, "contact": 2, "shop_receipt": 3}.get(name, 1)
        assert schema.checked_body == schema.body and schema.label == f"{name}@v{version}"
        assert lint_schema(schema.body) == []


def test_unknown_schema_name_lists_the_builtins() -> None:
    with pytest.raises(SchemaProblem, match=r"unknown schema 'invoice'.*expense"):
        load_schema("invoice")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not readable JSON"),
        ('["a list"]', "must be a JSON object"),
        ('{"title": "t", "x-version": 0, "type": "object", "properties": {}}', '"x-version" must be'),
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


def test_without_title_or_version_the_file_name_and_the_body_hash_identify_it(tmp_path) -> None:
    body = {k: v for k, v in _expense().items() if k not in ("title", "x-version")}
    path = tmp_path / "receipts.json"
    path.write_text(json.dumps(body))
    schema = load_schema(path)
    assert schema.name == "receipts" and schema.version == int(schema.digest[:7], 16)
    assert schema.label == f"receipts@{schema.digest[:7]}"
    body["properties"]["who"]["maxLength"] = 81
    path.write_text(json.dumps(body))
    assert load_schema(path).version != schema.version  # each body is its own version


def test_budget_grows_with_the_schema_and_stays_capped() -> None:
    small = format_budget(load_schema("chat_tag").body)
    body = _expense()
    body["properties"]["who"]["maxLength"] = 200
    assert format_budget(body) > format_budget(_expense())
    assert 50 < small <= 1024
    assert format_budget(load_schema("shopping_list").grammar_body) == 1024
