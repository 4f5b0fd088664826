r"""ECMA-262 patterns with Unicode property classes (`\p{L}`): accepted, checked after decoding with the
`regex` module, and kept out of the grammar because XGrammar misreads them (shown here, not assumed)."""

from __future__ import annotations

import json

import pytest

from formwork.schemas.normalise import normalise
from formwork.schemas.probe import probe
from formwork.schemas.registry import SchemaProblem, load_checked_body, schema_from_body
from formwork.tasks.engines.base import Completion
from formwork.tasks.validate import judge

NAME = r"^[\p{L}\p{Zs}'-]+$"
BODY = {
    "title": "person",
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": NAME, "maxLength": 40, "x-critical": True},
        "city": {"type": ["string", "null"], "pattern": r"^\p{Lu}\p{Ll}+$", "maxLength": 30},
    },
    "required": ["name", "city"],
    "additionalProperties": False,
}


def done(text: str) -> Completion:
    return Completion(text, "stop", 10, 10, 0.1, "test")  # type: ignore[arg-type]


def test_a_unicode_property_pattern_is_accepted_and_reported_checked_after() -> None:
    schema = load_checked_body(BODY, "person.json")  # the metaschema's `format: regex` and XGrammar
    after = schema.normalised.checked_after
    for field in ("name", "city"):
        assert any(f"/properties/{field}: pattern" in line and "checked after, not enforced" in line
                   for line in after), after  # fmt: skip
        grammar_field = schema.grammar_body["properties"][field]
        assert "pattern" not in json.dumps(grammar_field), grammar_field
    assert schema.validator.is_valid({"name": "Zoë Ångström-Łukasz", "city": "Zürich"})


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        ({"name": "Zoë", "city": "Zürich"}, "ok", ""),
        ({"name": "Zoë", "city": "zürich"}, "partial", "city: 'zürich' does not match"),
        ({"name": "R2-D2", "city": None}, "failed", "name: 'R2-D2' does not match"),
    ],
)
def test_a_value_breaking_the_pattern_fails_validation_after_decoding(
    data: dict, status: str, message: str
) -> None:
    schema = schema_from_body(BODY, "person.json")
    verdict = judge(schema, "Zoë, R2-D2, lives in Zürich (zürich)", done("notes"), done(json.dumps(data)))
    assert verdict.status == status, verdict.errors
    if message:
        assert any(message in error for error in verdict.errors), verdict.errors
    else:
        assert verdict.errors == []


def test_xgrammar_misreads_a_property_class_as_letters() -> None:
    """Why the pattern never reaches the grammar: XGrammar 0.2.9 reads `[\\p{L}]` as `[p{L}]`."""
    import xgrammar

    from formwork.schemas.probe import _compiler

    compiled = _compiler().compile_json_schema(json.dumps({"type": "string", "pattern": r"^[\p{L}]+$"}))

    def grammar_accepts(text: str) -> bool:
        return xgrammar.GrammarMatcher(compiled).accept_string(json.dumps(text))

    assert not grammar_accepts("abc")  # valid letters forbidden...
    assert grammar_accepts("p{L}")  # ...and `{`, which is no letter, let through


def test_the_probe_never_reports_a_misread_pattern_as_enforced() -> None:
    body = {"type": "object", "properties": {"v": {"type": "string", "pattern": r"^[\p{L}\p{N}]+$"}},
            "required": ["v"], "additionalProperties": False}  # fmt: skip
    naive = probe(
        {**body, "properties": {"v": {**body["properties"]["v"], "maxLength": 8}}}, body, samples=32
    )
    assert naive.violated["pattern"] > 0, naive  # kept in the grammar, the pattern would be let through
    report = normalise(body)
    result = probe(report.grammar, report.checked, samples=48)
    assert result.finished >= 12 and result.violated["pattern"] > 0  # dropped: random strings break it...
    assert set(result.violated) <= {"pattern", "(not JSON)"}, result.examples
    assert any("/properties/v: pattern" in line for line in report.checked_after)  # ...and it says so


def test_pattern_properties_and_format_regex_read_by_the_regex_module() -> None:
    body = {"title": "tags", "type": "object", "patternProperties": {r"^\p{L}+$": {"type": "string"}},
            "additionalProperties": False, "properties": {"rule": {"type": "string", "format": "regex"}},
            "required": ["rule"]}  # fmt: skip
    validator = schema_from_body(body, "tags.json").validator
    assert validator.is_valid({"rule": r"\p{Lu}+", "Größe": "L"})
    assert not validator.is_valid({"rule": r"\p{Lu}+", "size2": "L"})  # matches no pattern: additional
    assert not validator.is_valid({"rule": "[unclosed"})  # format regex still checked
    with pytest.raises(SchemaProblem, match="not a valid JSON Schema"):
        schema_from_body(
            {**body, "properties": {"rule": {"type": "string", "pattern": "[unclosed"}}}, "bad.json"
        )


def test_unevaluated_properties_beside_a_key_only_regex_reads_is_refused() -> None:
    body = {"title": "tags", "type": "object", "patternProperties": {r"^\p{L}+$": {"type": "string"}},
            "unevaluatedProperties": False}  # fmt: skip
    with pytest.raises(SchemaProblem, match=r"beyond Python's re.*unevaluatedProperties"):
        schema_from_body(body, "tags.json")
