"""Size the formatting pass's `max_tokens` from the schema itself.

The grammar stops decoding as soon as the JSON is complete, so the budget is only a ceiling: it must be
large enough for the longest document the schema allows (or a valid answer is cut at `length`) and no
larger (or a runaway costs more). Every token is at least one byte, so counting the worst case in
bytes is a safe ceiling: a free string of maxLength N is at most 4N bytes of UTF-8 (emoji take 4).
"""

from __future__ import annotations

import json
from typing import Any

NUMBER_BYTES = 24  # -1.2345678901234567e+308 fits
UNBOUNDED_STRING_BYTES = 256  # `format` strings (dates, e-mails) with no maxLength
MAX_BUDGET = 1024  # a ceiling that fits small contexts; a `length` stop is retried with more
# Bounds the normaliser gives a free string or array that has none: one such string at its worst
# (4 bytes a character) fills the ceiling, and 20 items is what a message lists in practice.
FREE_STRING_CHARS = MAX_BUDGET // 4
FREE_ARRAY_ITEMS = 20


def _node_bytes(node: dict[str, Any] | bool) -> int:
    if not isinstance(node, dict):
        return 4
    if isinstance(node.get("anyOf"), list):
        return max([_node_bytes(branch) for branch in node["anyOf"]] or [4])
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        return max(len(json.dumps(v, ensure_ascii=False).encode()) for v in values)
    declared = node.get("type", "null")
    types = set(declared if isinstance(declared, list) else [declared])
    sizes = [4]  # null
    if "string" in types:
        sizes.append(4 * node["maxLength"] + 2 if "maxLength" in node else UNBOUNDED_STRING_BYTES)
    if types & {"number", "integer"}:
        sizes.append(NUMBER_BYTES)
    if "boolean" in types:
        sizes.append(5)
    if "array" in types:
        fixed = [_node_bytes(item) + 2 for item in node.get("prefixItems", [])]
        item = _node_bytes(node.get("items", {}))
        sizes.append(2 + sum(fixed) + max(node.get("maxItems", 0) - len(fixed), 0) * (item + 2))
    if "object" in types:
        sizes.append(
            2 + sum(len(key) + 6 + _node_bytes(child) for key, child in node.get("properties", {}).items())
        )
    return max(sizes)


def format_budget(body: dict[str, Any]) -> int:
    """The formatting pass's max_tokens for this schema: worst-case bytes plus the stop token."""
    return min(_node_bytes(body) + 1, MAX_BUDGET)
