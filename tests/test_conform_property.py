"""For generated schemas and outputs the checked body accepts, the conformed output validates against
the user's original body (issue 21): no row Formwork calls valid is one the user's schema refuses.

Schemas are drawn from the shapes users write (optional and required keys, defaults, nullable and
non-nullable types, enums, formats, nested objects, arrays of objects, `$ref`s, drafts 4, 7 and
2020-12); outputs are drawn from the checked body as the grammar writes them (every declared key
present, `null` where absent). hypothesis-jsonschema 0.23.1 installs but fails on Hypothesis 6.170
(`'many' object has no attribute 'more'`), so `value_of` draws them for the keywords used here.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import validators

from formwork.schemas.conform import conform
from formwork.schemas.registry import schema_from_body

DRAFTS = [
    "http://json-schema.org/draft-04/schema#",
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2020-12/schema",
]
FORMATS = ["date", "date-time", "email", "uuid", "ipv4"]


def scalar() -> st.SearchStrategy[dict[str, Any]]:
    strings = st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(1, 12))
    formatted = st.sampled_from(FORMATS).map(lambda f: {"type": "string", "format": f})
    numbers = st.builds(
        lambda t, lo: {"type": t, "minimum": lo, "maximum": lo + 50},
        st.sampled_from(["integer", "number"]),
        st.integers(-5, 5),
    )
    enums = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=3, unique=True)
    return st.one_of(
        strings, formatted, numbers, st.just({"type": "boolean"}), enums.map(lambda e: {"enum": e})
    )


def nullable(node: dict[str, Any]) -> dict[str, Any]:
    annotations = {"default": node.pop("default")} if "default" in node else {}
    if "enum" in node:
        return {**annotations, "enum": [*node["enum"], None]}
    return {**annotations, "anyOf": [node, {"type": "null"}]}


def with_default(node: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """The node, maybe with a default that it accepts (as Pydantic writes `quantity: int = 1`)."""
    low, text = node.get("minimum"), None if "format" in node else "x"
    choices: dict[str, Any] = {"boolean": False, "integer": low, "number": low, "string": text}
    default = node["enum"][0] if "enum" in node else choices.get(node.get("type", ""))
    if default is None:
        return st.just(node)
    return st.sampled_from([node, {**node, "default": default}])


def obj(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def build(props: dict[str, dict[str, Any]], required: list[bool], closed: bool) -> dict[str, Any]:
        names = list(props)
        body: dict[str, Any] = {"type": "object", "properties": props}
        if any(required):  # draft 4 refuses an empty `required`
            body["required"] = [n for n, r in zip(names, required, strict=True) if r]
        return {**body, "additionalProperties": False} if closed else body

    field = children.flatmap(with_default).flatmap(lambda n: st.sampled_from([n, nullable(dict(n))]))
    props = st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), field, min_size=1, max_size=4)
    return props.flatmap(
        lambda p: st.builds(
            build, st.just(p), st.lists(st.booleans(), min_size=len(p), max_size=len(p)), st.booleans()
        )
    )


def arrays(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda item, n: {"type": "array", "items": item, "maxItems": n}, children, st.integers(1, 3)
    )


NODES = st.recursive(scalar(), lambda inner: st.one_of(obj(inner), arrays(inner)), max_leaves=6)


def with_refs(body: dict[str, Any], draft: str) -> dict[str, Any]:
    """The first object-valued property moved into `$defs`/`definitions` behind a `$ref`."""
    home = "$defs" if "2020-12" in draft else "definitions"
    for name, child in body["properties"].items():
        if child.get("type") == "object":
            props = {**body["properties"], name: {"$ref": f"#/{home}/Part"}}
            return {**body, "properties": props, home: {"Part": child}}
    return body


SCHEMAS = st.builds(
    lambda root, draft, refs: {"$schema": draft, **(with_refs(root, draft) if refs else root)},
    obj(NODES),
    st.sampled_from(DRAFTS),
    st.booleans(),
)


FORMATTED = {
    "date": st.dates().map(lambda d: d.isoformat()),
    "date-time": st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat()),
    "email": st.emails(),
    "uuid": st.uuids().map(str),
    "ipv4": st.ip_addresses(v=4).map(str),
}


def value_of(node: Any) -> st.SearchStrategy[Any]:
    """A value the checked `node` accepts, with every declared key present (the grammar's view)."""
    if "anyOf" in node:
        return st.one_of([value_of(branch) for branch in node["anyOf"]])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kind = node["type"]
    if isinstance(kind, list):  # the normaliser's nullable form: ["string", "null"]
        return st.one_of([value_of({**node, "type": one}) for one in kind])
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind in ("integer", "number"):
        ints = st.integers(node["minimum"], node["maximum"])
        return (
            ints
            if kind == "integer"
            else st.one_of(ints, ints.map(lambda n: n + 0.5)).filter(lambda x: x <= node["maximum"])
        )
    if kind == "string":
        return FORMATTED[node["format"]] if "format" in node else st.text(max_size=node["maxLength"])
    if kind == "array":
        return st.lists(value_of(node["items"]), max_size=node["maxItems"])
    return st.fixed_dictionaries({k: value_of(v) for k, v in node["properties"].items()})


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_conformed_output_validates_against_the_original_body(data: st.DataObject) -> None:
    body = data.draw(SCHEMAS, label="schema")
    schema = schema_from_body(body, "<generated>")
    output = data.draw(value_of(schema.checked_body), label="output")
    assert schema.validator.is_valid(output)  # the checked body accepts it, as the gate requires
    done = conform(schema, output)
    assert done.problems == [], done.problems
    cls = validators.validator_for(body)
    cls(body, format_checker=schema.validator.FORMAT_CHECKER).validate(done.data)
    for path in done.absent:  # dropped only where the output said null at that path
        assert "." in path or "[" in path or output.get(path) is None
