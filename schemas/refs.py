"""Inline a schema's local `$ref`s, so the grammar and the validator see one self-contained tree.

Pydantic and most hand-written schemas put shared parts in `$defs` (or draft-07's `definitions`) and
point at them with `$ref`. Grammar engines differ in how far they follow references, and a remote one
cannot be fetched at run time at all (it used to pass the lint, then fail every record), so every
reference is resolved here once: local ones are inlined, remote and recursive ones are refused with
the pointer where they stand and what to do instead.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from formwork.schemas.walk import Node, map_subschemas

MAX_INLINED_NODES = 20_000  # a schema that grows past this by inlining is refused, not expanded forever
DEFINITIONS = ("$defs", "definitions")


class RefProblem(ValueError):
    """A `$ref` that cannot be inlined: remote, recursive, dangling, or one that grows without bound."""


def _target(root: Node, ref: str, where: str) -> Node:
    base = str(root.get("$id") or root.get("id") or "").split("#")[0]
    local = ref[len(base) :] if base and ref.startswith(base) else ref
    if not local.startswith("#"):
        raise RefProblem(
            f"#{where}: $ref {ref!r} points outside this file (a remote reference cannot be fetched "
            "while records run); copy the referenced schema into $defs and use '#/$defs/NAME'"
        )
    fragment = unquote(local[1:])
    if fragment and not fragment.startswith("/"):
        raise RefProblem(f"#{where}: $ref {ref!r} names an anchor; use a JSON pointer such as '#/$defs/NAME'")
    node: Any = root
    for part in fragment.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise RefProblem(f"#{where}: $ref {ref!r} points at nothing in this file")
    if not isinstance(node, dict):
        raise RefProblem(f"#{where}: $ref {ref!r} does not point at a schema object")
    return node


def inline_refs(root: Node) -> Node:
    """`root` with every `$ref` replaced by its target and the definitions dropped; raise RefProblem."""
    count = 0

    def expand(node: Node, where: str, active: tuple[str, ...]) -> Node:
        nonlocal count
        count += 1
        if count > MAX_INLINED_NODES:
            raise RefProblem(
                f"#{where}: the schema grows past {MAX_INLINED_NODES} nodes once its $refs are inlined"
            )
        if isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in active:
                raise RefProblem(
                    f"#{where}: $ref {ref!r} is recursive (a tree of unbounded depth); "
                    "unroll it to the depth you need, or make that part a bounded string"
                )
            target = _target(root, ref, where)
            siblings = {k: v for k, v in node.items() if k not in ("$ref", *DEFINITIONS)}
            clashes = {k for k in siblings if k in target and target[k] != siblings[k]} - {
                "description",
                "title",
            }
            merged = {"allOf": [target, siblings]} if clashes else {**target, **siblings}
            return expand(merged, where, (*active, ref))
        return map_subschemas(
            {k: v for k, v in node.items() if k not in DEFINITIONS},
            lambda child, pointer: expand(child, pointer, active),
            where,
        )

    return expand(root, "", ())
