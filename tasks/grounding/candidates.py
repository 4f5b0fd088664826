"""The values a record's text can back, per field: what grounded decoding lets the grammar choose from.

Selection beats generation for a small model: a grammar that allows a field only the values its text
holds turns writing an amount into choosing one, and a value it can only copy is grounded by
construction. The candidates come from the same reader as the grounding check (`ValueFinder`'s
readings for numbers and dates, spans of the text for quotes), so what is proposed is what the checker
accepts. Per field rule (schemas.annotations):

- `value` numbers: every reading of every number, as JSON numbers;
- `value` dates: every date, relative ones resolved against the reference date, as ISO dates;
- `quote` strings: word n-grams inside one line up to the field's `maxLength` (CJK characters count as
  words), plus every e-mail address and phone number, each copied exactly as written;
- null, where the schema allows it; `none` fields (enums, booleans, derived values) keep their node.

Bounds, so a long text cannot make a grammar too large to compile in time: at most `MAX_WORDS` words
per span, `MAX_QUOTES` spans per field (shorter spans, and earlier ones, first: labels are short),
`MAX_VALUES` numbers or dates per field (in text order).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import regex

from formwork.schemas.annotations import Rule, rule_for, value_types
from formwork.tasks.grounding.aliases import written_labels
from formwork.tasks.grounding.evidence import LEMMA_LANGUAGES
from formwork.tasks.grounding.values import ValueFinder

MAX_WORDS = 8
MAX_QUOTES = 300
MAX_VALUES = 100
WORD = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]|[\p{L}\p{N}](?:[\p{L}\p{N}'’.&+\-/]*[\p{L}\p{N}])?")
EMAIL = regex.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
PHONE = regex.compile(r"\+?\d[\d\s().\-/]{5,}\d")


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def quote_spans(text: str, max_length: int) -> list[str]:
    """Word n-grams within each line (exact slices of the text), e-mails and phones; bounded."""
    found: dict[str, None] = {}
    for token in (*EMAIL.finditer(text), *PHONE.finditer(text)):
        found[token.group()] = None
    spans: list[tuple[int, int, str]] = []
    for line in regex.finditer(r"[^\n]+", text):
        words = [(m.start() + line.start(), m.end() + line.start()) for m in WORD.finditer(line.group())]
        for n in range(1, MAX_WORDS + 1):
            for i in range(len(words) - n + 1):
                start, end = words[i][0], words[i + n - 1][1]
                if end - start <= max_length:
                    spans.append((n, start, text[start:end]))
    for _, _, span in sorted(spans, key=lambda s: (s[0], s[1])):
        if len(found) >= MAX_QUOTES:
            break
        found[span] = None
    return list(found)


def base_forms(span: str) -> list[str]:
    """`span` with every word in its base form, in each language the checker lemmatises: a field that
    asks for the base form ("x-base-form": the item, singular) is backed by the text's "eggs", so its
    candidates must offer "egg" too, or the grammar forbids the answer the checker wants."""
    import simplemma

    def in_base_form(span: str, lang: str) -> str:
        words = regex.split(r"(\w+)", span)
        bases = [simplemma.lemmatize(w, lang=lang) if i % 2 else w for i, w in enumerate(words)]
        return "".join(b if b.lower() != w.lower() else w for b, w in zip(bases, words, strict=True))

    return [in_base_form(span, lang) for lang in LEMMA_LANGUAGES]


def _candidates(
    node: dict[str, Any], annotated: dict[str, Any], rule: Rule, finder: ValueFinder
) -> list[Any] | None:
    """The values `node` may take under grounded decoding; None: the field keeps its own node.
    `annotated` is the same field in the checked body, which keeps the `x-` annotations."""
    types = value_types(node)
    if rule == "value" and types & {"number", "integer"}:
        values = [_number(r.value) for r in finder.number_readings() if isinstance(r.value, Decimal)]
        if types == {"integer"}:
            values = [v for v in values if isinstance(v, int)]
    elif rule == "value" and node.get("format") == "date":
        values = [r.value.isoformat() for r in finder.date_readings() if isinstance(r.value, date)]
    elif rule == "quote" and types == {"string"} and "format" not in node and "pattern" not in node:
        values = quote_spans(finder.text, int(node.get("maxLength", 200)))
        if annotated.get("x-base-form") is True:
            values = [form for span in values for form in (span, *base_forms(span))]
    elif rule == "none" and (written := written_labels(annotated, finder.text)):
        values = list(written)  # an aliased enum: only the labels the text writes (tasks.grounding.aliases)
    else:
        return None
    values = list(dict.fromkeys(values))[: MAX_QUOTES if rule == "quote" else MAX_VALUES]
    nullable = "null" in (node.get("type") or []) or None in node.get("enum", [])
    return [*values, None] if nullable else values


def grounded_body(
    body: dict[str, Any], text: str, reference: date | None = None, annotated: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`body` (a grammar body) with every `quote` or `value` field, at any depth, replaced by an enum of
    its candidates. The rules are read from `annotated`, the checked body the judge grounds with: the
    grammar body has lost its `x-` annotations, so a field marked `x-grounding: none` would otherwise be
    narrowed to what its text holds (a quantity that is 1 "when no number is given" could not be 1)."""
    finder = ValueFinder(text, reference)

    def visit(node: Any, twin: Any, inherited: Rule | None) -> Any:
        if not isinstance(node, dict):
            return node
        twin = twin if isinstance(twin, dict) else node
        rule = rule_for(twin, inherited)
        passed: Rule | None = "none" if twin.get("x-grounding") == "none" else inherited
        if "properties" in node or "items" in node:
            copy = dict(node)
            if "properties" in node:
                twins = twin.get("properties") or {}
                copy["properties"] = {
                    k: visit(v, twins.get(k), passed) for k, v in node["properties"].items()
                }
            if isinstance(node.get("items"), dict):
                copy["items"] = visit(node["items"], twin.get("items"), passed)
            return copy
        values = _candidates(node, twin, rule, finder)
        if values is None:
            return node
        if not [v for v in values if v is not None]:
            return {"type": "null"} if None in values else node  # nothing to choose: only null, or as is
        return {"enum": values}

    return visit(body, annotated, None)
