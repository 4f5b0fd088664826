"""Where subschemas live inside a JSON Schema node, so every pass walks a schema the same way.

A property may be named `definitions` or `not`: only the keyword positions listed here hold schemas,
so a walker that follows these tables never mistakes a property name for a keyword.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

ONE = ("additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
       "additionalItems", "unevaluatedItems", "unevaluatedProperties", "items")  # fmt: skip
MANY = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
MAPPED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")

Node = dict[str, Any]


def pointer_part(key: str | int) -> str:
    """One JSON pointer reference token (RFC 6901): `~` and `/` escaped."""
    return str(key).replace("~", "~0").replace("/", "~1")


def subschemas(node: Node, pointer: str = "") -> Iterator[tuple[str, Node]]:
    """Every direct subschema of `node` with its JSON pointer (dict subschemas only)."""
    for key in ONE:
        if isinstance(node.get(key), dict):
            yield f"{pointer}/{key}", node[key]
    for key in MANY:
        if isinstance(node.get(key), list):
            for index, child in enumerate(node[key]):
                if isinstance(child, dict):
                    yield f"{pointer}/{key}/{index}", child
    for key in MAPPED:
        if isinstance(node.get(key), dict):
            for name, child in node[key].items():
                if isinstance(child, dict):
                    yield f"{pointer}/{key}/{pointer_part(name)}", child


def walk(node: Node, pointer: str = "") -> Iterator[tuple[str, Node]]:
    """`node` and every schema below it, depth first, each with its JSON pointer."""
    yield pointer, node
    for child_pointer, child in subschemas(node, pointer):
        yield from walk(child, child_pointer)


def map_subschemas(node: Node, change: Callable[[Node, str], Any], pointer: str = "") -> Node:
    """A copy of `node` whose direct subschemas are replaced by `change(subschema, pointer)`."""
    copy = dict(node)
    for key in ONE:
        if isinstance(node.get(key), dict):
            copy[key] = change(node[key], f"{pointer}/{key}")
    for key in MANY:
        if isinstance(node.get(key), list):
            copy[key] = [
                change(child, f"{pointer}/{key}/{i}") if isinstance(child, dict) else child
                for i, child in enumerate(node[key])
            ]
    for key in MAPPED:
        if isinstance(node.get(key), dict):
            copy[key] = {
                name: change(child, f"{pointer}/{key}/{pointer_part(name)}")
                if isinstance(child, dict)
                else child
                for name, child in node[key].items()
            }
    return copy


def nested_deeper(value: Any, levels: int) -> bool:
    """Whether `value` nests lists and dicts more than `levels` deep, found level by level (no
    recursion), so that JSON nested 600 deep is told apart before any recursive walk meets it."""
    level = [value]
    for _ in range(levels + 1):
        level = [c for v in level for c in _children(v)]
        if not level:
            return False
    return True


def _children(value: Any) -> Iterable[Any]:
    return value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()


def types_of(node: Node) -> set[str]:
    """The JSON types a node declares (through `type`, `enum` or `const`); empty when it says none."""
    if "const" in node:
        return {json_type(node["const"])}
    if "enum" in node and isinstance(node["enum"], list):
        return {json_type(v) for v in node["enum"]}
    declared = node.get("type", [])
    return set(declared if isinstance(declared, list) else [declared])


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]
