"""What each top-level field of a schema is when a long text is read in parts: a header or items.

A long text (a receipt of sixty lines, a monthly statement, a mail thread) is extracted part by part
(tasks/long/), and the parts' rows are merged. How a field merges depends on its role:
- **items**: an array of things the text lists (line items, the expenses of a statement, the contacts
  of a thread): each part gives the items it reads, and the merged row holds them all, in order of
  first appearance, duplicates from the parts' overlap removed;
- **header**: one value per record (vendor, date, total, the sender): every part that states it must
  state the same value, else the field is a conflict, nulled and listed, never a silent pick.

The role follows the shape: a top-level array is items, anything else a header. `x-split: items` or
`x-split: header` on a property overrides that, and `x-key` on an items property names the fields
of an item that identify it (two items from different parts with the same key are one item).
A part may not state a header field at all (the total stands on the last page only), so each part is
read under `part_body`: every header field may be null and none is critical there; the merged row is
then judged against the user's own schema like any other.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["items", "header"]
PART_NOTE = (
    "The text is one part of a longer one: give only what this part states, and null for a field it "
    "does not state (another part may)."
)


@dataclass(frozen=True)
class Roles:
    """Each top-level field's role, and the fields that identify an item of each items field."""

    roles: dict[str, Role]
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    inferred: frozenset[str] = frozenset()  # the fields whose role came from the shape, not x-split

    @property
    def items(self) -> list[str]:
        return [name for name, role in self.roles.items() if role == "items"]

    @property
    def headers(self) -> list[str]:
        return [name for name, role in self.roles.items() if role == "header"]

    def explain(self) -> list[str]:
        """One line per field saying how a long text's parts merge it, and why it got that role."""
        lines = []
        for name, role in self.roles.items():
            why = "from its shape" if name in self.inferred else "x-split"
            if role == "items":
                key = f", one item per x-key {list(self.keys[name])}" if self.keys.get(name) else ""
                lines.append(f"{name}: items ({why}): each part's items are kept, overlaps removed{key}")
            else:
                lines.append(f"{name}: header ({why}): every part that states it must agree")
        return lines


def _is_array(node: dict[str, Any]) -> bool:
    declared = node.get("type")
    return declared == "array" or (isinstance(declared, list) and "array" in declared)


def schema_roles(body: dict[str, Any]) -> Roles:
    """The roles of `body`'s top-level properties (see the module docstring)."""
    roles: dict[str, Role] = {}
    keys: dict[str, tuple[str, ...]] = {}
    inferred = set()
    for name, node in (body.get("properties") or {}).items():
        node = node if isinstance(node, dict) else {}
        declared = node.get("x-split")
        if declared in ("items", "header"):
            roles[name] = declared
        else:
            roles[name] = "items" if _is_array(node) else "header"
            inferred.add(name)
        if roles[name] == "items" and isinstance(node.get("x-key"), list):
            keys[name] = tuple(str(k) for k in node["x-key"])
    return Roles(roles, keys, frozenset(inferred))


def item_node(body: dict[str, Any], name: str) -> dict[str, Any]:
    """The schema of one item of the top-level property `name` ({} when it states none)."""
    node = (body.get("properties") or {}).get(name)
    item = node.get("items") if isinstance(node, dict) else None
    return item if isinstance(item, dict) else {}


def role_problems(body: dict[str, Any]) -> list[str]:
    """What is wrong with a schema's `x-split` and `x-key` annotations, as messages that say what to
    change: a role other than the two, items on a non-array, a key naming no field of the item."""
    problems = []
    for name, node in (body.get("properties") or {}).items():
        if not isinstance(node, dict):
            continue
        where = f"#/properties/{name}"
        split = node.get("x-split")
        if split is not None and split not in ("items", "header"):
            problems.append(f"{where}: x-split is 'items' or 'header', not {split!r}")
        if split == "items" and not _is_array(node):
            problems.append(f"{where}: x-split 'items' needs an array (its type is {node.get('type')!r})")
        if "x-key" in node:
            fields = (item_node(body, name).get("properties") or {}) if _is_array(node) else {}
            key = node["x-key"]
            if not isinstance(key, list) or not key or any(k not in fields for k in key):
                problems.append(
                    f"{where}: x-key lists field names of the array's items (it has {sorted(fields)})"
                )
    return problems


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`node` that also accepts null, and is not critical: a part may not state it."""
    node = {k: v for k, v in node.items() if k not in ("x-critical", "default")}
    if "enum" in node and None not in node["enum"]:
        node["enum"] = [*node["enum"], None]
    declared = node.get("type")
    if isinstance(declared, str) and declared != "null":
        node["type"] = [declared, "null"]
    elif isinstance(declared, list) and "null" not in declared:
        node["type"] = [*declared, "null"]
    elif "const" in node:
        node = {"anyOf": [node, {"type": "null"}]}
    return node


def part_body(body: dict[str, Any]) -> dict[str, Any]:
    """The schema one part of a long text is read under: header fields nullable and not critical, the
    note that the text is a part in the root's description, the title marked as a part's."""
    roles = schema_roles(body)
    part = copy.deepcopy(body)
    for name in roles.headers:
        part["properties"][name] = _nullable(part["properties"][name])
    part["description"] = f"{body.get('description', '')} {PART_NOTE}".strip()
    part["title"] = f"{body.get('title', 'schema')} (part)"
    return part
