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

A list may instead be read item by item (tasks/long/itemwise.py): each unit that holds one item (a
table row, a line, a message) under `unit_body` (the item, or null), and the text around the units
once under `header_body` (the header fields alone). `x-units` on an items property says what holds
one item ("rows", "lines", "messages"), or "none" where items are named across sentences and the
text is read in parts; without it the text's layout decides (tasks/long/read.py).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["items", "header"]
HEADER_NOTE = (
    "The text is what stands around a long list's items (its top, its totals): give the fields it states, "
    "and null for a field it does not state."
)
UNIT_NOTE = (
    "The text is one {noun} of a longer list, and almost every {noun} of it states an item: give it. "
    "Null only where the {noun} plainly states none (a heading, a total, or what the list's description "
    "says is not an item)."
)
UNIT_KINDS = ("rows", "lines", "messages", "none")  # x-units: what holds one item; none: read in parts
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
    units: dict[str, str] = field(default_factory=dict)  # an items field's `x-units`, where it says one

    @property
    def items(self) -> list[str]:
        return [name for name, role in self.roles.items() if role == "items"]

    @property
    def headers(self) -> list[str]:
        return [name for name, role in self.roles.items() if role == "header"]

    def explain(self) -> list[str]:
        """One line per field saying how a long text's parts merge it, and why it got that role; for
        the items, what unit holds one item (`x-units`)."""
        lines = []
        for name, role in self.roles.items():
            why = "from its shape" if name in self.inferred else "x-split"
            if role == "items":
                key = f", one item per x-key {list(self.keys[name])}" if self.keys.get(name) else ""
                declared = self.units.get(name)
                read = {
                    None: "read one unit at a time where the text's layout shows a long list of them",
                    "none": "never read one unit at a time (x-units none)",
                }.get(declared, f"read one of its {declared} at a time (x-units)")
                lines.append(
                    f"{name}: items ({why}): {read}; each part's items are kept, overlaps removed{key}"
                )
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
    units: dict[str, str] = {}
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
        if roles[name] == "items" and node.get("x-units") in UNIT_KINDS:
            units[name] = node["x-units"]
    return Roles(roles, keys, frozenset(inferred), units)


def item_node(body: dict[str, Any], name: str) -> dict[str, Any]:
    """The schema of one item of the top-level property `name` ({} when it states none)."""
    node = (body.get("properties") or {}).get(name)
    item = node.get("items") if isinstance(node, dict) else None
    return item if isinstance(item, dict) else {}


def role_problems(body: dict[str, Any]) -> list[str]:
    """What is wrong with a schema's `x-split`, `x-units` and `x-key` annotations, as messages that say
    what to change: a role other than the two, items or units on a non-array, a unit kind not known, a
    key naming no field of the item."""
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
        units = node.get("x-units")
        if units is not None and (units not in UNIT_KINDS or not _is_array(node)):
            problems.append(
                f"{where}: x-units is one of {', '.join(UNIT_KINDS)}, on an array (not {units!r})"
            )
        if "x-key" in node:
            fields = (item_node(body, name).get("properties") or {}) if _is_array(node) else {}
            key = node["x-key"]
            if not isinstance(key, list) or not key or any(k not in fields for k in key):
                problems.append(
                    f"{where}: x-key lists field names of the array's items (it has {sorted(fields)})"
                )
    return problems


def nullable(node: dict[str, Any]) -> dict[str, Any]:
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
        part["properties"][name] = nullable(part["properties"][name])
    part["description"] = f"{body.get('description', '')} {PART_NOTE}".strip()
    part["title"] = f"{body.get('title', 'schema')} (part)"
    return part


def header_body(body: dict[str, Any]) -> dict[str, Any]:
    """The schema a list's header text (the text with its item units taken out, tasks/long/units.py)
    is read under: the header fields alone, nullable and not critical, as a part's are."""
    roles = schema_roles(body)
    header = part_body(body)
    header["properties"] = {name: header["properties"][name] for name in roles.headers}
    header["required"] = [name for name in body.get("required", []) if name in roles.headers]
    header["description"] = f"{body.get('description', '')} {HEADER_NOTE}".strip()
    header["title"] = f"{body.get('title', 'schema')} (header)"
    return header


def unit_body(body: dict[str, Any], name: str, noun: str) -> dict[str, Any]:
    """The schema one unit of the list `name` (a table row, a line, a message: `noun`) is read under:
    the item it states, or null where it states none."""
    listed = (body.get("properties") or {}).get(name, {}).get("description", "")
    item = {
        **item_node(body, name),
        "description": f"The item this {noun} states. The list: {listed}",
    }
    kept = {k: v for k, v in body.items() if k in ("$schema", "x-grounded-decoding", "x-date-order")}
    return kept | {
        "title": f"{body.get('title', 'schema')} (one {noun})",
        "description": UNIT_NOTE.format(noun=noun),
        "type": "object",
        "properties": {name: nullable(item)},
        "required": [name],
        "additionalProperties": False,
        "x-empty-ok": True,  # a unit that states no item is an answer, not an empty row
    }
