"""Schemas that used to hang a run, end `formwork schemas` in a traceback or decode nothing (issue 54,
points 16, 17, 18 and 27): each is matched in bounded time or refused at load with lines that say what
to fix."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from formwork.flows.cli import app
from formwork.schemas.registry import SchemaProblem, schema_from_body
from formwork.tasks.grounding.candidates import grounded_body

runner = CliRunner()


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


def _refusal(body: dict[str, Any], tmp_path: Path) -> str:
    """What `formwork schemas` says of `body`: refused, in lines of its own, and never a traceback."""
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(body))
    shown = runner.invoke(app, ["schemas", str(path)])
    assert shown.exit_code == 1 and isinstance(shown.exception, SystemExit), shown.output
    assert "refused" in shown.output and "Traceback" not in shown.output, shown.output
    result = runner.invoke(app, ["schemas", str(path), "--format", "jsonl"])
    (verdict,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and verdict["accepted"] is False
    return "\n".join(verdict["refused_because"])


# 18: a schema nested past any recursive walk's reach


def _nested_schema(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string", "maxLength": 20, "description": "a name"}
    for _ in range(depth):
        node = {**_object({"inner": node}), "additionalProperties": False}
    return {"title": "deep", **node}


def test_a_schema_nested_100_deep_is_refused_in_one_line(tmp_path) -> None:
    output = _refusal(_nested_schema(100), tmp_path)
    assert "the schema nests more than 64 levels of JSON" in output and "flatten it" in output
    with pytest.raises(SchemaProblem, match="nests more than 64 levels"):
        schema_from_body(_nested_schema(100), "deep")


def test_a_chain_of_refs_nested_past_the_bound_is_refused_once_inlined() -> None:
    defs = {f"D{i}": {**_object({"inner": {"$ref": f"#/$defs/D{i + 1}"}}), "additionalProperties": False}
            for i in range(60)}  # fmt: skip
    defs["D60"] = {"type": "string", "maxLength": 5}
    body = {"title": "chain", **_object({"top": {"$ref": "#/$defs/D0"}}), "$defs": defs}
    with pytest.raises(SchemaProblem, match="once its \\$refs are inlined, the schema nests more than 64"):
        schema_from_body(body, "chain")


def test_a_schema_nested_within_the_bound_is_read_and_validated() -> None:
    schema = schema_from_body(_nested_schema(30), "deep")
    value: Any = "Ada"
    for _ in range(30):
        value = {"inner": value}
    assert schema.validator.is_valid(value)
    grounded = grounded_body(schema.grammar_body, "Ada wrote it", checked=schema.checked_body)
    for _ in range(30):
        grounded = grounded["properties"]["inner"]
    assert "Ada" in grounded["enum"], grounded


# 17: a property name holding `.` or `[` was read as a path


@pytest.mark.parametrize("name", ["amount.eur", "items[0]", "a]b"])
def test_a_property_name_that_reads_as_a_path_is_refused(name: str, tmp_path) -> None:
    body = {"title": "dotted", **_object({"inner": _object({name: {"type": "number"}})})}
    output = _refusal(body, tmp_path)
    assert f"the property name {name!r} holds '.', '[' or ']'" in output and "rename it" in output
    with pytest.raises(SchemaProblem, match=r"read.* as a path"):
        schema_from_body(body, "dotted")


# 27: a dict[str, str] field was accepted and always decoded as {}


class Tagged(BaseModel):
    title: str
    tags: dict[str, str]


def test_a_dict_of_free_keys_is_refused_and_says_why(tmp_path) -> None:
    output = _refusal(Tagged.model_json_schema(), tmp_path)
    assert "#/properties/tags: an object of free keys" in output and "always be decoded as {}" in output
    patterned = _object({"scores": {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "number"}}}})
    with pytest.raises(SchemaProblem, match="an object of free keys"):
        schema_from_body(patterned, "patterned")
    free_form = schema_from_body(_object({"note": {"type": "object"}}), "free")  # no key schema: said, kept
    assert any("a free-form object is decoded as {}" in line for line in free_form.normalised.changed)


# 16: a pattern that backtracks without bound held the GIL for hours


def test_a_pattern_that_backtracks_on_a_run_of_digits_is_refused_at_load(tmp_path) -> None:
    body = {
        "title": "codes",
        **_object({"code": {"type": "string", "maxLength": 80, "pattern": "^(\\d|\\d\\d)+$"}}),
    }
    started = time.monotonic()
    output = _refusal(body, tmp_path)
    assert "#/properties/code/pattern: '^(\\\\d|\\\\d\\\\d)+$' takes over 0.05 s" in output, output
    assert time.monotonic() - started < 10


def test_a_pattern_the_probes_miss_is_still_matched_in_bounded_time() -> None:
    """`^(7|77)+$` blows up only on runs of 7: the load probes miss it, and every match has a budget."""
    field = {"type": "string", "maxLength": 80, "pattern": "^(7|77)+$", "x-grounding": "quote"}
    schema = schema_from_body({"title": "sevens", **_object({"code": field})}, "sevens")
    started = time.monotonic()
    errors = [e.message for e in schema.validator.iter_errors({"code": "7" * 60 + "x"})]
    assert errors == [f"{'7' * 60 + 'x'!r} cannot be checked against '^(7|77)+$' (over 0.1 s): refused"]
    text = "Ref " + "7" * 60 + "x and code 777"
    grounded = grounded_body(schema.grammar_body, text, checked=schema.checked_body)
    assert time.monotonic() - started < 10, "each match stops at 0.1 s, and a field's search at three"
    assert grounded["properties"]["code"]["enum"][:1] == ["777"]
