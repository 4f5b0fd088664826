"""The grounding annotations of a schema: which rule backs each field, and the lint of `x-grounding`.

These are schema semantics, read where a schema is loaded (schemas.normalise refuses a rule the
grounding step cannot follow) and where a record is judged (tasks.grounding), so they live with the
schemas, below both:
- `quote` (default for free strings): the value must be a span of the text;
- `value` (default for numbers and `format: date` strings): the number or date in any written form;
- `none` (default for enums, booleans, objects and arrays): no span needed.

One annotation of the root belongs to the decision rather than to grounding, and is linted here too:
`x-empty-ok: true` says a row with no value at all (every field null) is a valid answer for this
schema (a "nothing to extract" message); without it such a row is never `ok` (tasks.validate).

`x-date-order` ("day-first" or "month-first", at the root) says how the records write the dates
their digits leave open: "03/06/2024" is 3 June day first, 6 March month first. Without it both
readings are offered and accepted, and on real receipts a small model took the wrong one in 15 of 16
wrong dates (BENCHMARKS section 45); a date the text settles ("25/06/2024") is read as written.
"""

from __future__ import annotations

from typing import Any, Literal

Rule = Literal["quote", "value", "none"]
RULES: tuple[Rule, ...] = ("quote", "value", "none")
DateOrder = Literal["day-first", "month-first"]
DATE_ORDERS: tuple[DateOrder, ...] = ("day-first", "month-first")


def date_order(body: dict[str, Any]) -> DateOrder | None:
    """The root's `x-date-order`, linted on load (`grounding_problems`)."""
    order = body.get("x-date-order")
    return order if order in DATE_ORDERS else None


def value_types(node: dict[str, Any]) -> set[str]:
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared} - {"null"}
    if isinstance(declared, list):
        return set(declared) - {"null"}
    names = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "array"}
    values = [*node.get("enum", []), *([node["const"]] if "const" in node else [])]
    return {names[type(v)] for v in values if type(v) in names}


def default_rule(node: dict[str, Any]) -> Rule:
    """The rule a field gets without an annotation: chosen values need none, written ones a span."""
    types = value_types(node)
    if "enum" in node or "const" in node or types <= {"boolean"} or types & {"object", "array"}:
        return "none"
    if types & {"number", "integer"} or node.get("format") in ("date", "date-time"):
        return "value"
    return "quote"


def rule_for(node: dict[str, Any], inherited: Rule | None = None) -> Rule:
    declared = node.get("x-grounding")
    if declared in RULES:
        return declared
    return inherited or default_rule(node)


def _aliases_fit(node: dict[str, Any]) -> bool:
    declared, labels = node["x-aliases"], node.get("enum")
    if (
        not isinstance(declared, dict)
        or not isinstance(labels, list)
        or node.get("x-grounding") in ("quote", "value")
    ):
        return False
    return all(
        label in labels and isinstance(terms, list) and all(isinstance(t, str) and t.strip() for t in terms)
        for label, terms in declared.items()
    )


def grounding_problems(body: dict[str, Any]) -> list[str]:
    """Lint the `x-grounding`, `x-min-confidence`, `x-base-form`, `x-aliases`, `x-grounded-decoding`,
    `x-empty-ok` and `x-date-order` annotations of a schema; one message per problem. An annotation that
    cannot apply where it stands is a problem, not a no-op: the user wrote it expecting an effect."""
    problems: list[str] = []

    def visit(node: Any, path: str, inherited: Rule | None = None) -> None:
        if not isinstance(node, dict):
            return
        types, declared = value_types(node), node.get("x-grounding")
        where = path or "(root)"
        passed: Rule | None = "none" if declared == "none" else inherited
        if "x-base-form" in node and (
            not isinstance(node["x-base-form"], bool)
            or "string" not in types
            or rule_for(node, inherited) != "quote"
        ):
            problems.append(f"{where}: x-base-form is true or false, on a string grounded by quote")
        if "x-aliases" in node and not _aliases_fit(node):
            problems.append(
                f"{where}: x-aliases maps labels of this field's enum to lists of non-empty strings "
                '(e.g. {"EUR": ["€", "euro"]})'
            )
        if "x-grounded-decoding" in node and (path or not isinstance(node["x-grounded-decoding"], bool)):
            problems.append(f"{where}: x-grounded-decoding is true or false, at the schema's root only")
        if "x-empty-ok" in node and (path or not isinstance(node["x-empty-ok"], bool)):
            problems.append(f"{where}: x-empty-ok is true or false, at the schema's root only")
        if "x-date-order" in node and (path or node["x-date-order"] not in DATE_ORDERS):
            problems.append(f"{where}: x-date-order is day-first or month-first, at the schema's root only")
        if declared is not None and declared not in RULES:
            problems.append(f"{where}: x-grounding must be one of quote, value, none (got {declared!r})")
        elif declared in ("quote", "value"):
            if types & {"object", "array"}:
                problems.append(f"{where}: x-grounding {declared} on an object or array; only none fits")
            elif types <= {"boolean"}:
                problems.append(
                    f"{where}: x-grounding {declared} on a boolean; a boolean is chosen: use none"
                )
            elif declared == "value" and "enum" in node:
                problems.append(
                    f"{where}: x-grounding value on an enum; use none, or quote to find the label"
                )
            elif declared == "quote" and types & {"number", "integer"}:
                problems.append(f"{where}: x-grounding quote on a number; use value (any written form)")
        if "x-min-confidence" in node:
            bound = node["x-min-confidence"]
            bounds = list(bound.values()) if isinstance(bound, dict) and bound else [bound]
            if any(isinstance(b, bool) or not isinstance(b, int | float) or not 0 <= b <= 1 for b in bounds):
                problems.append(
                    f"{where}: x-min-confidence must be a number from 0 to 1, or an object of such numbers "
                    f'by model name with "*" for any other model (got {bound!r})'
                )
            elif types & {"object", "array"}:
                problems.append(f"{where}: x-min-confidence applies to values, not to an object or array")
        for key, child in (node.get("properties") or {}).items():
            visit(child, f"{path}.{key}" if path else key, passed)
        if isinstance(node.get("items"), dict):
            visit(node["items"], f"{path}[]", passed)

    visit(body, "")
    return problems
