"""A Pydantic model named as package.module:Model loads like any schema: nested, optional, enums."""

from __future__ import annotations

import json

import pytest

from formwork.schemas.lint import grammar_compile_error
from formwork.schemas.registry import SchemaProblem, load_checked_schema, load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.validate import judge

SPEC = "tests.pydantic_models:Receipt"


def test_the_model_loads_with_nested_optional_and_enum_fields() -> None:
    schema = load_checked_schema(SPEC)
    assert schema.name == "Receipt" and schema.label.startswith("Receipt@")
    props = schema.checked_body["properties"]
    assert props["currency"]["enum"] == ["EUR", "USD"] and props["kind"]["enum"] == ["shop", "restaurant"]
    assert props["merchant"]["description"] == "Who was paid"
    line = props["items"]["items"]["properties"]
    assert line["description"]["maxLength"] == 40 and line["amount"]["anyOf"][1] == {"type": "null"}
    assert set(schema.grammar_body["required"]) == set(props)  # missing means null
    assert {
        "currency",
        "kind",
        "items",
    } <= schema.critical_fields and "merchant" not in schema.critical_fields
    grammar = schema.grammar_body["properties"]
    assert grammar["items"]["maxItems"] == 10 and grammar["note"]["anyOf"] == [
        {"type": "string", "maxLength": 256},
        {"type": "null"},
    ]
    assert grammar_compile_error(schema.grammar_body) is None


def test_an_output_is_judged_per_path_against_the_model() -> None:
    schema = load_schema(SPEC)
    data = {"merchant": None, "currency": "EUR", "kind": "shop", "note": None,
            "items": [{"description": "tea", "amount": -1}]}  # fmt: skip
    done = Completion(json.dumps(data), "stop", 1, 1, 0.1, "test")  # type: ignore[arg-type]
    result = judge(schema, "tea", done, done)
    assert result.status == "partial" and result.nulled == ["items[0].amount"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests.no_such_module:Model", "cannot import module"),
        ("tests.pydantic_models:Missing", "has no 'Missing'"),
        ("tests.pydantic_models:Literal", "is not a Pydantic model"),
    ],
)
def test_a_bad_model_spec_says_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(SchemaProblem, match=message):
        load_schema(spec)


def test_a_model_in_the_working_directory_is_found_without_pythonpath(tmp_path, monkeypatch) -> None:
    """Issue 51 point 4: `--schema tickets:Ticket` beside tickets.py failed ("cannot import module")
    unless the user set PYTHONPATH=., since the `formwork` command does not import from the working
    directory; it now looks there last, after the installed packages."""
    import sys

    from formwork.schemas.pydantic_source import model_schema

    (tmp_path / "tickets_wd.py").write_text(
        "from typing import Literal\nfrom pydantic import BaseModel\n\n"
        "class Ticket(BaseModel):\n    severity: Literal['low', 'high']\n    product: str | None = None\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "tickets_wd", raising=False)
    body = model_schema("tickets_wd:Ticket")
    assert body["properties"]["severity"]["enum"] == ["low", "high"]
    assert sys.path[-1] == str(tmp_path)  # last: a file here never shadows an installed package
    sys.modules.pop("tickets_wd", None)
