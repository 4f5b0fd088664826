"""Build the body XGrammar decodes from the checked body: only enforced keywords, every value bounded.

Each node keeps the keywords the grammar enforces (schemas/normalise.py's ENFORCED, measured by
schemas/probe.py) and gets the bounds that stop a looping model; everything else stays in the checked
body, which jsonschema applies to every output, and is listed as "checked after, not enforced".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from formwork.schemas.budget import FREE_ARRAY_ITEMS, FREE_STRING_CHARS
from formwork.schemas.walk import Node, pointer_part, types_of

# Keywords XGrammar 0.2.9 enforces (tests/test_probe.py samples each and finds no violation).
ENFORCED = {"type", "properties", "required", "additionalProperties", "enum", "const", "items",
            "prefixItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "minimum",
            "maximum", "exclusiveMinimum", "exclusiveMaximum", "anyOf"}  # fmt: skip
# Keywords the grammar drops or cannot express; jsonschema checks them on every output.
CHECKED_AFTER = {"uniqueItems", "not", "if", "then", "else", "minProperties", "maxProperties",
                 "patternProperties", "dependentRequired", "dependentSchemas", "dependencies",
                 "propertyNames", "contains", "minContains", "maxContains", "unevaluatedItems",
                 "unevaluatedProperties", "additionalItems", "oneOf",
                 "multipleOf"}  # fmt: skip
# Formats whose strings have a fixed length: the grammar keeps them (shape enforced, the date's
# existence checked after). Other formats are decoded as bounded strings and checked after decoding:
# XGrammar ignores maxLength beside `format`, and SmolLM2 once wrote 1,024 tokens of one e-mail.
BOUNDED_FORMATS = {"date", "date-time", "time", "uuid", "ipv4"}
X_FORMATS = {"email"}  # Formwork's own `x-format`, checked after decoding by tasks/validate.py
REFUSED = {"$dynamicRef": "a dynamic reference", "$recursiveRef": "a recursive reference"}


@dataclass
class Normalised:
    """The two bodies and the report: what was changed and what is checked after, not enforced."""

    checked: Node
    grammar: Node
    changed: list[str] = field(default_factory=list)
    checked_after: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def show(pointer: str) -> str:
    return f"#{pointer}" if pointer else "# (root)"


NUMBER_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
ANNOTATION_KEYS = {"description", "title", "x-critical", "examples", "default", "$comment"}
INFERRED = {"object": ("properties", "required", "additionalProperties", "minProperties", "maxProperties"),
            "array": ("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"),
            "string": ("maxLength", "minLength", "pattern", "format"),
            "number": NUMBER_KEYS}  # fmt: skip
ANY_VALUE = ["string", "number", "boolean", "null"]
LOOKAROUND = re.compile(r"\(\?<?[=!]|\\[1-9]")  # XGrammar drops lookarounds and backreferences
# XGrammar 0.2.9 reads `[\p{L}]` as the four characters `p{L}` (and refuses `\p{L}` outside a class):
# it would forbid valid letters and let `{` through, so a Unicode property class never reaches it.
UNICODE_PROPERTY = re.compile(r"(?<!\\)(?:\\\\)*\\[pP]\{")
PATH_SIGNS = re.compile(r"[.\[\]]")  # schemas/paths.py writes a value's path as `items[2].amount`


class Clash(ValueError):
    """Two parts of an `allOf` (or a node and its `anyOf` branch) constrain one keyword differently."""


def merge(base: Node, extra: Node) -> Node:
    """One node meaning `base` and `extra` together, for the keywords the grammar reads; raise Clash.

    Keywords the grammar does not read keep `base`'s value: the checked body still holds both parts.
    """
    merged = dict(base)
    for key, value in extra.items():
        if (
            key not in merged
            or merged[key] == value
            or key not in ENFORCED - {"additionalProperties"} | {"format"}
        ):
            merged.setdefault(key, value)
        elif key == "type":
            both = types_of({"type": merged["type"]}) & types_of({"type": value})
            if not both:
                raise Clash(f"type {merged['type']!r} against {value!r}")
            merged["type"] = sorted(both)
        elif key == "enum" and isinstance(value, list):
            merged["enum"] = [v for v in merged["enum"] if v in value]
            if not merged["enum"]:
                raise Clash(f"enum {base['enum']!r} against {value!r}")
        elif key in ("minimum", "exclusiveMinimum", "minLength", "minItems"):
            merged[key] = max(merged[key], value)
        elif key in ("maximum", "exclusiveMaximum", "maxLength", "maxItems"):
            merged[key] = min(merged[key], value)
        elif key == "required":
            merged["required"] = [*merged["required"], *(k for k in value if k not in merged["required"])]
        elif key == "properties" and isinstance(value, dict):
            props = dict(merged["properties"])
            for name, child in value.items():
                old = props.get(name)
                both_schemas = isinstance(old, dict) and isinstance(child, dict)
                props[name] = (
                    merge(old, child) if both_schemas else (False if False in (old, child) else child)
                )
            merged["properties"] = props
        elif key == "items" and isinstance(value, dict) and isinstance(merged["items"], dict):
            merged["items"] = merge(merged["items"], value)
        else:
            raise Clash(f"{key} {merged[key]!r} against {value!r}")
    return merged


@cache
def _pattern_unbounded(pattern: str) -> bool:
    """True when the pattern matches strings of any length (`.*`, `a+`, `{2,}`), or Python cannot tell.

    XGrammar ignores maxLength beside a pattern, so such a pattern in the grammar lets a looping model
    write to the token budget. `re`'s parser measures the longest match; a pattern it cannot read
    counts as unbounded.
    """
    from re import _constants, _parser  # the stdlib's own regex parser: the width of a pattern

    try:
        return bool(_parser.parse(pattern).getwidth()[1] >= _constants.MAXREPEAT)
    except Exception:  # re.error, or a recursion limit on a pathological pattern
        return True


@cache
def _pattern_compiles(pattern: str) -> bool:
    import xgrammar

    try:
        xgrammar.Grammar.from_json_schema(json.dumps({"type": "string", "pattern": pattern}))
    except Exception:  # xgrammar raises plain RuntimeError subclasses for regex it cannot read
        return False
    return True


class GrammarBuilder:
    """Walks the checked body once, writing the grammar body and the report's lines."""

    def __init__(self, report: Normalised, format_checkers: Any) -> None:
        self.report, self.checkers, self.refusals = report, set(format_checkers), []

    def after(self, pointer: str, what: str) -> None:
        self.report.checked_after.append(f"{show(pointer)}: {what}: checked after, not enforced")

    def build(self, node: Any, pointer: str) -> Node:
        if not isinstance(node, dict):
            return self.build({} if node is not False else {"not": {}}, pointer)
        for key in REFUSED.keys() & node.keys():
            self.refusals.append(f"{show(pointer)}: {key} ({REFUSED[key]}) cannot be decoded; unroll it")
        if "x-format" in node and node["x-format"] not in X_FORMATS:
            self.refusals.append(
                f"{show(pointer)}: x-format {node['x-format']!r} is unknown; "
                f"use one of {sorted(X_FORMATS)} or remove it"
            )
        for key in sorted(CHECKED_AFTER & node.keys()):
            self.after(pointer, key)
        if isinstance(node.get("allOf"), list):
            try:
                for index, part in enumerate(node["allOf"]):
                    for key in sorted(CHECKED_AFTER & (part.keys() if isinstance(part, dict) else set())):
                        self.after(f"{pointer}/allOf/{index}", key)  # merged below, so reported here
                    node = merge(
                        {k: v for k, v in node.items() if k != "allOf"},
                        part if isinstance(part, dict) else {},
                    )
            except Clash as exc:
                self.refusals.append(f"{show(pointer)}: allOf parts clash ({exc}); merge them by hand")
                return {}
        branches = node.get("anyOf") if isinstance(node.get("anyOf"), list) else node.get("oneOf")
        if isinstance(branches, list):
            return self._branches(node, branches, pointer)
        if "enum" in node or "const" in node:
            return {k: node[k] for k in ("enum", "const") if k in node}
        types = types_of(node) or {t for t, keys in INFERRED.items() if set(keys) & node.keys()}
        if not types or node.get("type") == []:
            self.report.changed.append(
                f"{show(pointer)}: any value allowed; decoded as a bounded string, number, boolean or null"
            )
            types = set(ANY_VALUE)
        grammar: Node = {"type": sorted(types) if len(types) > 1 else next(iter(types))}
        if "string" in types:
            grammar.update(self._string(node, pointer))
        if types & {"number", "integer"}:
            grammar.update(self._number(node))
        if "array" in types:
            grammar.update(self._array(node, pointer))
        if "object" in types:
            grammar.update(self._object(node, pointer))
        return grammar

    def _branches(self, node: Node, branches: list[Any], pointer: str) -> Node:
        base = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
        out = []
        for index, branch in enumerate(branches):
            where = f"{pointer}/{'anyOf' if 'anyOf' in node else 'oneOf'}/{index}"
            try:
                out.append(self.build(merge(base, branch if isinstance(branch, dict) else {}), where))
            except Clash:
                continue  # a branch that contradicts its parent can match nothing: the grammar drops it
        return {"anyOf": out} if out else {"type": "null"}

    def _string(self, node: Node, pointer: str) -> Node:
        grammar: Node = {}
        fmt, pattern = node.get("format"), node.get("pattern")
        if fmt in BOUNDED_FORMATS:
            grammar["format"] = fmt
            self.after(pointer, f"format {fmt!r} beyond its shape (a date that exists)")
        elif fmt and fmt in self.checkers:
            self.after(pointer, f"format {fmt!r} (decoded as a bounded string)")
        elif fmt:
            self.report.ignored.append(
                f"{show(pointer)}: format {fmt!r} is not checked at all: jsonschema has no checker for it"
            )
        if isinstance(pattern, str) and "format" not in grammar:
            if UNICODE_PROPERTY.search(pattern):
                self.after(pointer, f"pattern {pattern!r} (the grammar misreads its \\p{{...}} classes)")
            elif _pattern_unbounded(pattern):
                self.after(pointer, f"pattern {pattern!r} (unbounded: decoded as a bounded string)")
                self.report.changed.append(
                    f"{show(pointer)}: pattern {pattern!r} has no length bound and XGrammar ignores "
                    "maxLength beside it; decoded as a bounded string, the pattern checked after "
                    "(bound its repetitions, e.g. {0,40} instead of *)"
                )
            elif _pattern_compiles(pattern):
                grammar["pattern"] = pattern
                if LOOKAROUND.search(pattern):
                    self.after(pointer, "pattern's lookaround (the grammar ignores it)")
            else:
                self.after(pointer, f"pattern {pattern!r} (the grammar cannot read this regex)")
        elif pattern is not None:
            self.after(pointer, "pattern beside format")
        if grammar:
            if {"maxLength", "minLength"} & node.keys():
                self.after(pointer, "maxLength/minLength beside format or pattern")
            return grammar
        if node.get("x-format") in X_FORMATS:
            self.after(pointer, f"x-format {node['x-format']!r}")
        bound = node.get("maxLength")
        if not isinstance(bound, int):
            bound = max(FREE_STRING_CHARS, node.get("minLength", 0))
            self.report.changed.append(
                f"{show(pointer)}: a free string got maxLength {bound} (set your own maxLength)"
            )
        return {"maxLength": bound, **({"minLength": node["minLength"]} if "minLength" in node else {})}

    def _number(self, node: Node) -> Node:
        grammar = {
            k: node[k]
            for k in NUMBER_KEYS
            if isinstance(node.get(k), int | float) and not isinstance(node.get(k), bool)
        }
        for side, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if node.get(side) is True and bound in node:  # draft-04 spelling: a flag on the bound
                grammar[side] = grammar.pop(bound)
        return grammar

    def _array(self, node: Node, pointer: str) -> Node:
        grammar: Node = {}
        items = node.get("items")
        tuple_items = (
            node.get("prefixItems")
            if isinstance(node.get("prefixItems"), list)
            else items
            if isinstance(items, list)
            else None
        )
        if tuple_items is not None:
            grammar["prefixItems"] = [
                self.build(x, f"{pointer}/prefixItems/{i}") for i, x in enumerate(tuple_items)
            ]
            rest = items if isinstance(node.get("prefixItems"), list) else node.get("additionalItems", True)
            grammar["items"] = (
                False
                if rest is False
                else self.build(rest if isinstance(rest, dict) else {}, f"{pointer}/items")
            )
        else:
            grammar["items"] = self.build(items if isinstance(items, dict) else {}, f"{pointer}/items")
        bound = node.get("maxItems")
        if not isinstance(bound, int):
            bound = max(FREE_ARRAY_ITEMS, node.get("minItems", 0))
            self.report.changed.append(
                f"{show(pointer)}: an array got maxItems {bound} (set your own maxItems)"
            )
        grammar["maxItems"] = bound
        if isinstance(node.get("minItems"), int):
            grammar["minItems"] = node["minItems"]
        return grammar

    def _object(self, node: Node, pointer: str) -> Node:
        properties = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        required = [k for k in node.get("required", []) if isinstance(k, str)]
        names = [k for k in properties if properties[k] is not False] + [
            k for k in required if k not in properties
        ]
        for name in names:
            if PATH_SIGNS.search(name):
                self.refusals.append(
                    f"{show(pointer)}: the property name {name!r} holds '.', '[' or ']', which Formwork "
                    "reads as a path into the record (items[0].amount); rename it (an underscore for the dot)"
                )
        free = node.get("additionalProperties")
        if not names and ((isinstance(free, dict) and free) or node.get("patternProperties")):
            self.refusals.append(
                f"{show(pointer)}: an object of free keys (a dict[str, ...]: additionalProperties or "
                "patternProperties, and no properties) would always be decoded as {}, since only declared "
                "keys are read; declare its keys as properties, or make it a list of {key, value} objects"
            )
        if free is not False:
            what = "only the declared keys are decoded" if names else "a free-form object is decoded as {}"
            self.report.changed.append(f"{show(pointer)}: additionalProperties false added ({what})")
        return {
            "properties": {
                k: self.build(properties.get(k, {}), f"{pointer}/properties/{pointer_part(k)}") for k in names
            },
            "required": names,
            "additionalProperties": False,
        }
