"""Paths into a record (`items[2].amount`) and the checked schema node each one stands for.

Validation, nulling and statuses work per element and path: a failed non-critical field deep inside a
list is set to null where it stands, when its schema lets it be null, and only that path is listed;
otherwise the failure climbs to the nearest ancestor that can be nulled, and to the record itself
(status failed) when none can.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from formwork.schemas.walk import Node, types_of

Path = tuple[str | int, ...]
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
PATH_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def path_text(path: Sequence[str | int]) -> str:
    """`("items", 2, "amount")` as `items[2].amount`; the empty path as `(root)`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(root)"


def parse_path(text: str) -> Path:
    """`items[2].amount` as `("items", 2, "amount")`: evidence paths meet validation's paths."""
    return tuple(int(index) if index else key for index, key in PATH_PART.findall(text))


def _branches(node: Node) -> list[Node]:
    found = node.get("anyOf") or node.get("oneOf") or []
    return [node, *(b for b in found if isinstance(b, dict))]


def child_node(node: Node, part: str | int) -> Node | None:
    """The schema of `part` (a key or an index) inside `node`, looking through anyOf/oneOf branches."""
    for branch in _branches(node):
        if isinstance(part, int):
            prefix = branch.get("prefixItems")
            if isinstance(prefix, list) and part < len(prefix):
                return prefix[part]
            if isinstance(branch.get("items"), dict):
                return branch["items"]
        elif isinstance(branch.get("properties"), dict) and part in branch["properties"]:
            child = branch["properties"][part]
            return child if isinstance(child, dict) else {}
    return None


def accepts_null(node: Node) -> bool:
    if types_of(node) and "null" not in types_of(node):  # `{"type": "object", "anyOf": [{"required"...`
        return False
    branches = node.get("anyOf") or node.get("oneOf")
    if isinstance(branches, list):
        return any(isinstance(b, dict) and accepts_null(b) for b in branches)
    return "null" in types_of(node) or not types_of(node)


def node_at(checked: Node, path: Path) -> Node | None:
    """The schema node `path` stands for in `checked`, or None where the schema has none."""
    node: Node | None = checked
    for part in path:
        node = child_node(node, part) if node is not None else None
    return node


def null_target(checked: Node, path: Path) -> Path | None:
    """The deepest prefix of `path` that may be set to null (nullable, not x-critical), or None."""
    nodes: list[Node | None] = [checked]
    for part in path:
        parent = nodes[-1]
        nodes.append(child_node(parent, part) if parent is not None else None)
    for depth in range(len(path), 0, -1):
        node = nodes[depth]
        if node is not None and accepts_null(node) and not node.get("x-critical"):
            return path[:depth]
    return None


def set_null(data: Any, path: Path) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = None


def values_with_nodes(node: Node, value: Any, path: Path = ()) -> Iterator[tuple[Path, Node, Any]]:
    """Every value in `value` with its path and schema node, depth first."""
    yield path, node, value
    children = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for part, child in children:
        child_schema = child_node(node, part)
        if child_schema is not None:
            yield from values_with_nodes(child_schema, child, (*path, part))


def semantic_errors(checked: Node, data: Any, source: str) -> list[tuple[Path, str]]:
    """Checks no grammar can make, at every path: plausible e-mails, no values copied from examples."""
    errors = []
    for path, node, value in values_with_nodes(checked, data):
        where = path_text(path)
        emails = [b for b in _branches(node) if "email" in (b.get("x-format"), b.get("format"))]
        if emails and isinstance(value, str) and not EMAIL.match(value):
            errors.append((path, f"{where}: {value!r} does not look like an e-mail address"))
        examples = node.get("examples") if isinstance(node.get("examples"), list) else []
        if (
            value is not None
            and not isinstance(value, dict | list)
            and value in examples
            and str(value) not in source
        ):
            errors.append((path, f"{where}: {value!r} is the schema's example, not found in the text"))
    return errors
