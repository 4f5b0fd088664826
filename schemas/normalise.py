"""Turn a schema as users write it into two bodies: what the grammar decodes, and what is checked after.

Users arrive with schemas from APIs, other tools and Pydantic. The enum-first rules (every key
present, optional means null, bounded strings and arrays, only keys the schema names) keep decoding
safe, so what can be made safe automatically is, and every change is reported with its JSON pointer:

- `checked`: the user's constraints, `$ref`s inlined, each optional property made nullable (the
  grammar makes it required: missing means null; `required` stays as written here, so a normalised
  schema never contradicts itself, e.g. on a key an `allOf` sibling forbids), a root that is not an
  object wrapped as `{"value": ...}`. jsonschema validates every output against it, so no
  constraint of the user's is lost.
- `grammar`: what XGrammar decodes: only keywords it enforces (measured with schemas/probe.py),
  `additionalProperties: false`, a bound on every free string and array, `allOf` merged, `oneOf`
  as `anyOf`. A keyword the grammar lets through is listed as "checked after, not enforced".

What cannot be made safe (a remote or recursive `$ref`, an unknown `x-format`, an `allOf` whose parts
clash) is refused naming the keyword, its pointer and the fix. `strict=True` refuses every change too.
"""

from __future__ import annotations

import copy

from formwork.schemas.annotations import grounding_problems
from formwork.schemas.grammar_body import CHECKED_AFTER, ENFORCED, GrammarBuilder, Normalised, show
from formwork.schemas.paths import accepts_null
from formwork.schemas.refs import RefProblem, inline_refs
from formwork.schemas.roles import role_problems
from formwork.schemas.validator import re_only_gaps, slow_patterns, validator_class
from formwork.schemas.walk import Node, map_subschemas, nested_deeper, types_of

ROOT_FIELD = "value"
# Levels of JSON (a nested object is two: `properties`, then its node); every pass walks a schema
# recursively, and one nested 100 objects deep ended `formwork schemas` in a RecursionError.
MAX_LEVELS = 64
TOO_DEEP = (
    f"the schema nests more than {MAX_LEVELS} levels of JSON (about {MAX_LEVELS // 2} objects, one inside "
    "the next); flatten it"
)


class NormaliseProblem(ValueError):
    """The schema cannot be made safe to decode; `reasons` name the keyword, pointer and fix."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("\n".join(reasons))
        self.reasons = reasons


def _nullable(node: Node) -> Node:
    if accepts_null(node):
        return node
    if {"const", "anyOf", "oneOf", "allOf"} & node.keys() or not {"type", "enum"} & node.keys():
        annotations = {k: node[k] for k in ("description", "title", "x-critical") if k in node}
        return {**annotations, "anyOf": [node, {"type": "null"}]}
    nullable = dict(node)
    if isinstance(node.get("type"), str | list):
        declared = node["type"] if isinstance(node["type"], list) else [node["type"]]
        nullable["type"] = [*declared, "null"]
    if isinstance(node.get("enum"), list):
        nullable["enum"] = [*node["enum"], None]
    return nullable


def _is_object(node: Node) -> bool:
    return "object" in types_of(node) or (not types_of(node) and "properties" in node)


def root_wrapped(body: Node) -> bool:
    """True when `body`'s root is not an object, so outputs hold it as `{"value": ...}`."""
    return not (_is_object(body) and types_of(body) <= {"object"})


def make_checked(body: Node, report: Normalised) -> Node:
    """The user's constraints with optional properties nullable, and the root an object."""

    def visit(node: Node, pointer: str) -> Node:
        node = map_subschemas(node, visit, pointer)
        properties = node.get("properties")
        if isinstance(properties, dict):
            required = [k for k in node.get("required", []) if isinstance(k, str)]
            optional = [k for k in properties if k not in required and properties[k] is not False]
            if optional:
                report.changed.append(
                    f"{show(pointer)}: optional {optional} made required and nullable (missing means null)"
                )
                node["properties"] = {
                    k: _nullable(v if isinstance(v, dict) else {}) if k in optional else v
                    for k, v in properties.items()
                }
        return node

    checked = visit(body, "")
    if not root_wrapped(checked):
        return checked
    report.changed.append(f'# (root): the root is not an object; wrapped as {{"{ROOT_FIELD}": ...}}')
    inner = {k: v for k, v in checked.items() if k not in ("$schema", "$id", "id", "title")}
    return {
        **{k: checked[k] for k in ("$schema", "title", "description") if k in checked},
        "type": "object",
        "properties": {ROOT_FIELD: {**inner, "x-critical": True}},
        "required": [ROOT_FIELD],
        "additionalProperties": False,
    }


def normalise(body: Node, strict: bool = False) -> Normalised:
    """Both bodies and the report for `body`; raise NormaliseProblem with every reason it is refused."""
    report = Normalised(checked={}, grammar={})
    try:
        inlined = inline_refs(copy.deepcopy(body))
    except RefProblem as exc:
        raise NormaliseProblem([str(exc)]) from exc
    except RecursionError as exc:  # a chain of $refs, each inside the next: deeper than any walk goes
        raise NormaliseProblem([f"# (root): once its $refs are inlined, {TOO_DEEP}"]) from exc
    if nested_deeper(inlined, MAX_LEVELS):
        raise NormaliseProblem([f"# (root): once its $refs are inlined, {TOO_DEEP}"])
    report.checked = make_checked(inlined, report)
    builder = GrammarBuilder(report, validator_class(body).FORMAT_CHECKER.checkers)
    report.grammar = builder.build(report.checked, "")
    builder.refusals += re_only_gaps(report.checked)  # a pattern jsonschema would read with `re`
    builder.refusals += slow_patterns(report.checked)  # a pattern no record could be matched against in time
    builder.refusals += grounding_problems(report.checked)  # a rule the grounding step cannot follow
    builder.refusals += role_problems(inlined)  # x-split / x-key a long text's merge cannot follow
    if strict and report.changed:
        builder.refusals += [f"{change} (refused: --strict)" for change in report.changed]
    if builder.refusals:
        raise NormaliseProblem(builder.refusals)
    return report


__all__ = ["CHECKED_AFTER", "ENFORCED", "NormaliseProblem", "Normalised", "normalise"]
