"""Enum-first lint: the rules that keep a schema safe to decode under a grammar and easy to validate.

Why each rule:
- every property is required and optional means `null`: a missing key and a null are then never
  confused, and a failed non-critical field can be set to null honestly (status `partial`);
- free strings have `maxLength` and arrays `maxItems`: a grammar with no bound lets a looping model run
  to the token budget (`"john_john_john_..."`);
- `additionalProperties: false`: the grammar then offers only the schema's keys;
- every property has a `description`: it is the field guide the reasoning pass reads;
- only keywords the grammar engine enforces: grammar engines drop unknown keywords silently, and a
  keyword nobody enforces is a promise nobody keeps (checked against XGrammar 0.2.9 and vLLM 0.32).
"""

from __future__ import annotations

import json
from typing import Any

ANNOTATIONS = {"$schema", "$id", "$comment", "title", "description", "examples", "default"}
ENFORCED = {
    "type", "properties", "required", "additionalProperties", "enum", "const", "items", "minItems",
    "maxItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "anyOf", "$ref", "$defs",
}  # fmt: skip
REFUSED_BY_VLLM = {"uniqueItems": "vLLM's xgrammar backend refuses it with HTTP 400"}
# Formats whose strings have a fixed length. XGrammar ignores maxLength beside `format` or `pattern`
# (it only logs "format combined with minLength/maxLength is not supported"), so an unbounded format
# such as email lets a looping model run to the budget: seen here, 1,024 tokens of "acme.com/acme...".
BOUNDED_FORMATS = {"date", "date-time", "time", "uuid", "ipv4"}
CHECKED_AFTER = {"email"}  # `x-format`: bounded by maxLength in the grammar, checked after decoding


def _types(node: dict[str, Any]) -> set[str]:
    if "enum" in node:
        return {type(v).__name__ for v in node["enum"]}
    declared = node.get("type", [])
    return set(declared if isinstance(declared, list) else [declared])


def _accepts_null(node: dict[str, Any]) -> bool:
    return None in node.get("enum", []) or "null" in _types(node)


def _check_keywords(node: dict[str, Any], where: str) -> list[str]:
    problems = []
    for key in node:
        if key in REFUSED_BY_VLLM:
            problems.append(f"{where}: {key!r} cannot be used ({REFUSED_BY_VLLM[key]}); check it after")
        elif key not in ENFORCED and key not in ANNOTATIONS and not key.startswith("x-"):
            problems.append(f"{where}: keyword {key!r} is not enforced by the grammar engine; remove it")
    if "format" in node and node["format"] not in BOUNDED_FORMATS:
        problems.append(
            f"{where}: format {node['format']!r} has no length bound in the grammar; use one of "
            f'{sorted(BOUNDED_FORMATS)}, or maxLength with "x-format": "email" (checked after decoding)'
        )
    if "x-format" in node and node["x-format"] not in CHECKED_AFTER:
        known = sorted(CHECKED_AFTER)
        problems.append(f"{where}: x-format {node['x-format']!r} is unknown; use one of {known}")
    for bound in ("maxLength", "minLength"):
        if bound in node and ("format" in node or "pattern" in node):
            problems.append(f"{where}: the grammar ignores {bound} beside format or pattern; drop one")
    return problems


def _check_node(node: dict[str, Any], where: str) -> list[str]:
    problems = _check_keywords(node, where)
    types = _types(node)
    bounded = {"enum", "const", "maxLength", "format", "pattern"} & set(node)
    if ("str" in types or "string" in types) and not bounded:
        problems.append(f"{where}: a free string needs maxLength (or make it an enum)")
    if "array" in types:
        if "maxItems" not in node:
            problems.append(f"{where}: an array needs maxItems")
        if isinstance(node.get("items"), dict):
            problems += _check_node(node["items"], f"{where}[]")
    if "object" in types:
        problems += _check_object(node, where)
    return problems


def _check_object(node: dict[str, Any], where: str) -> list[str]:
    problems = []
    properties = node.get("properties") or {}
    if not properties:
        problems.append(f"{where}: an object needs properties")
    if node.get("additionalProperties") is not False:
        problems.append(f"{where}: set additionalProperties to false")
    missing = sorted(set(properties) - set(node.get("required", [])))
    if missing:
        problems.append(f"{where}: list every property in required (optional means null): {missing}")
    for key, child in properties.items():
        path = f"{where}.{key}" if where else key
        if not isinstance(child, dict):
            problems.append(f"{path}: must be a schema object")
            continue
        if not child.get("description"):
            problems.append(f"{path}: add a description (the field guide the model reads)")
        problems += _check_node(child, path)
    return problems


def lint_schema(body: dict[str, Any]) -> list[str]:
    """Every way `body` breaks the enum-first rules, as messages that say what to change."""
    if "object" not in _types(body):
        return ['(root): the root must be {"type": "object", ...}']
    problems = _check_keywords(body, "(root)") + _check_object(body, "")
    for key, child in (body.get("properties") or {}).items():
        if isinstance(child, dict) and not child.get("x-critical") and not _accepts_null(child):
            problems.append(f"{key}: a non-critical field must accept null (or mark it x-critical)")
    return problems


def grammar_compile_error(body: dict[str, Any]) -> str | None:
    """Compile the schema with XGrammar, as the engines will; return its error, or None if it compiles."""
    try:
        import xgrammar
    except ImportError:
        return "xgrammar is not installed (pip install 'formwork[local]'); cannot check compilation"
    try:
        xgrammar.Grammar.from_json_schema(json.dumps(body), any_whitespace=False)
    except Exception as exc:  # xgrammar raises plain RuntimeError/ValueError subclasses
        return f"XGrammar cannot compile it: {exc}"
    return None
