"""Score extracted rows against gold: the four outcomes, per-field accuracy, enum confusion, precision of ok.

Every record falls into exactly one outcome, in this order:
- `no_json`: nothing parseable came back (or the engine failed), so there is no object to score;
- `schema_mismatch`: JSON came back but failed validation (the caller names nulled fields, or its
  data breaks the schema); it may still be stored as `partial`, but it is not what was asked. A value
  dropped as unsure is nulled in a stored row too: flows.eval_steps scores the outcome on the values
  delivered, naming only the paths a refusal left empty, so unsure values are no mismatch;
- `content_wrong`: valid, but at least one scored field differs from the gold;
- `all_correct`: valid, and every field the gold names matches.

A gold may leave fields out: those are not scored. Each field is compared by a rule chosen from its
schema node and its name, and an `x-match` annotation on the node overrides the choice:

    text     short strings: equal after Unicode NFKC, case folding and collapsing spaces
    fuzzy    long free strings (maxLength over 100, or none): rapidfuzz ratio >= `x-match-threshold` (85)
    number   numbers (and integers): equal within `x-match-tolerance` (0.005), numeric strings accepted
    date     `format: date`: the same calendar day whatever the written form (dateparser)
    enum     enums: plain equality, and a confusion table is kept
    email    e-mail addresses: exactly equal after NFKC, case folding and a `mailto:` taken off
    url      URLs: exactly equal with the scheme and host in lower case (a bare "/" path is no path)
    digits   phone numbers and digit codes: the same digits in the same order, nothing else counted;
             a leading 00 reads as +, and a "(0)" after a country code (+44 (0)20) is dropped, so
             +44 20 7946 0958, 0044-20-7946-0958 and +44 (0)20 7946 0958 are one number; a national
             form (020 7946 0958) is not the international one: turning one into the other needs the
             country's trunk rules, and the schema asks for the number as written
    code     account, order and other reference numbers (IBAN, SKU, ids): exactly equal after NFKC,
             case folding and taking out spaces, dashes and dots
    exact    plain equality
A value that identifies something is compared exactly, never fuzzily: tim@acme.com is not tom@acme.com,
however close the strings. A string field is an identifier by its node (`format` or `x-format` email,
uri or url; a `pattern` that admits only digits and separators) or by its name (the last word of
`phone_number`, `contactEmail`, `order_id`, `iban`: schemas.identifiers); free text (names,
descriptions, notes) keeps `text` or `fuzzy`. Callers pass the field's path as `name` where they have it.
Arrays are compared element-wise (same length, each pair equal by the items' rule, items named as
their array); objects field by field, each named by its key.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from typing import Any, Literal

from formwork.schemas.identifiers import IDENTIFIERS, identifier_rule
from formwork.schemas.registry import Schema

OutcomeName = Literal["no_json", "schema_mismatch", "content_wrong", "all_correct"]
OUTCOMES: tuple[OutcomeName, ...] = ("no_json", "schema_mismatch", "content_wrong", "all_correct")
RULES = ("text", "fuzzy", "number", "date", "enum", "email", "url", "digits", "code", "exact")
LONG_STRING = 100  # a string field allowed more characters than this is free text, compared fuzzily
MISSING = "∅"  # the confusion table's label for a record with no value to show


def rule_for(node: dict[str, Any], name: str | None = None) -> str:
    """The comparison rule for one schema node: `x-match` if given, else derived from its type, its
    format and pattern, and the field's `name` (a path is fine: its last key is the name)."""
    if "x-match" in node:
        if node["x-match"] not in RULES:
            raise ValueError(f"x-match {node['x-match']!r} is not one of {', '.join(RULES)}")
        return node["x-match"]
    if "enum" in node:
        return "enum"
    types = node.get("type", [])
    types = {types} if isinstance(types, str) else set(types)
    if types & {"number", "integer"}:
        return "number"
    if node.get("format") == "date" or node.get("x-format") == "date":
        return "date"
    if "string" in types:
        if (identifier := identifier_rule(node, name)) is not None:
            return identifier
        return "fuzzy" if node.get("maxLength", LONG_STRING + 1) > LONG_STRING else "text"
    return "exact"


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.replace(",", "").strip())
        except ValueError:
            return None
    return None


@cache
def _day(value: str) -> date | None:
    """The calendar day a string names: ISO first (fast, exact), then dateparser for any written form."""
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        pass
    import dateparser  # heavy import, only when a date is not already ISO

    parsed = dateparser.parse(value, settings={"PREFER_DAY_OF_MONTH": "first"})
    return parsed.date() if parsed else None


def compare(node: dict[str, Any], gold: Any, got: Any, name: str | None = None) -> bool:
    """True when `got` counts as the gold value under the rule for the node and the field's `name` (its
    path, where the caller has it: an identifier is compared exactly, see the module's docstring)."""
    if gold is None or got is None:
        return gold is None and got is None
    if node.get("type") == "array" or (isinstance(gold, list) and "items" in node):
        items = node.get("items", {})
        return (
            isinstance(got, list)
            and len(got) == len(gold)
            and all(compare(items, one, other, name) for one, other in zip(gold, got, strict=True))
        )
    if isinstance(gold, dict):
        properties = node.get("properties", {})
        return isinstance(got, dict) and all(
            compare(properties.get(key, {}), value, got.get(key), key) for key, value in gold.items()
        )
    rule = rule_for(node, name)
    if rule in IDENTIFIERS:
        if not isinstance(gold, str) or not isinstance(got, str):
            return bool(gold == got)
        normal = IDENTIFIERS[rule]  # "n/a" is no phone number: what normalises to nothing matches only itself
        return gold == got or (bool(normal(gold)) and normal(gold) == normal(got))
    if rule == "number":
        a, b = _number(gold), _number(got)
        return (
            a is not None
            and b is not None
            and math.isclose(a, b, rel_tol=1e-9, abs_tol=float(node.get("x-match-tolerance", 0.005)))
        )
    if rule == "date":
        return (
            isinstance(got, str)
            and isinstance(gold, str)
            and _day(gold) is not None
            and _day(gold) == _day(got)
        )
    if rule in ("text", "fuzzy"):
        if not isinstance(got, str):
            return False
        if rule == "text":
            return _normal(gold) == _normal(got)
        from rapidfuzz import fuzz

        return fuzz.ratio(_normal(gold), _normal(got)) >= float(node.get("x-match-threshold", 85))
    return gold == got


@dataclass
class RecordScore:
    """How one record fared: its outcome, the pipeline's status, and each scored field's correctness."""

    record: str
    outcome: OutcomeName
    status: str
    fields: dict[str, bool]
    got: dict[str, Any] | None = None


def score_record(
    schema: Schema, record: str, gold: dict[str, Any], status: str, data: dict[str, Any] | None,
    nulled: Sequence[str] = (),
) -> RecordScore:  # fmt: skip
    """Put one stored row (status, data, nulled fields) in its outcome and compare every gold field.

    Scoring the stored row, not the model's raw text, judges exactly what production would keep: a
    field nulled by validation counts as a mismatch, and its null is scored like any other value.
    """
    unknown = set(gold) - set(schema.properties)
    if unknown:
        raise ValueError(f"gold of {record!r} names fields the schema lacks: {', '.join(sorted(unknown))}")
    fields = {
        key: data is not None and compare(schema.properties[key], value, data.get(key), key)
        for key, value in gold.items()
    }
    if data is None:
        outcome: OutcomeName = "no_json"
    elif nulled or not schema.validator.is_valid(data):
        outcome = "schema_mismatch"
    else:
        outcome = "all_correct" if all(fields.values()) else "content_wrong"
    return RecordScore(record, outcome, status, fields, data)


def _label(value: Any) -> str:
    return "null" if value is None else str(value)


@dataclass
class Report:
    """The numbers of one evaluation (one mode on one gold set), ready for tables, charts and the database."""

    records: int
    outcomes: dict[str, int]
    field_accuracy: dict[str, float]
    confusion: dict[str, dict[str, dict[str, int]]]  # field -> gold label -> predicted label -> count
    share_ok: float
    precision_ok: float | None  # None when no record was ok
    ok: int = 0
    # the same, over the records whose gold has a value: a field right only because an invented value
    # was refused and so left null, where the gold is null too, is not counted here
    stated_accuracy: dict[str, float] = field(default_factory=dict)
    extra: dict[str, float] = field(default_factory=dict)  # costs and counts added by the caller

    def as_dict(self) -> dict[str, Any]:
        return {
            "records": self.records, "outcomes": self.outcomes, "field_accuracy": self.field_accuracy,
            "confusion": self.confusion, "share_ok": self.share_ok, "precision_ok": self.precision_ok,
            "ok": self.ok, "stated_accuracy": self.stated_accuracy, **self.extra,
        }  # fmt: skip


def summarise(schema: Schema, scores: list[RecordScore], golds: list[dict[str, Any]]) -> Report:
    """Aggregate record scores (in the same order as their golds) into one report."""
    outcomes = Counter(s.outcome for s in scores)
    seen: Counter[str] = Counter()
    right: Counter[str] = Counter()
    stated: Counter[str] = Counter()
    stated_right: Counter[str] = Counter()
    for score, gold in zip(scores, golds, strict=True):
        seen.update(score.fields.keys())
        right.update(key for key, good in score.fields.items() if good)
        stated.update(key for key in score.fields if gold.get(key) is not None)
        stated_right.update(key for key, good in score.fields.items() if good and gold.get(key) is not None)
    confusion: dict[str, dict[str, dict[str, int]]] = {}
    for key, node in schema.properties.items():
        if rule_for(node, key) != "enum":
            continue
        table: dict[str, Counter[str]] = {}
        for score, gold in zip(scores, golds, strict=True):
            if key in gold:
                got = MISSING if score.got is None else _label(score.got.get(key))
                table.setdefault(_label(gold[key]), Counter())[got] += 1
        if table:
            confusion[key] = {g: dict(row) for g, row in table.items()}
    ok = [s for s in scores if s.status == "ok"]
    return Report(
        records=len(scores),
        outcomes={name: outcomes.get(name, 0) for name in OUTCOMES},
        field_accuracy={key: right[key] / seen[key] for key in schema.properties if seen[key]},
        confusion=confusion,
        share_ok=len(ok) / len(scores) if scores else 0.0,
        precision_ok=sum(all(s.fields.values()) for s in ok) / len(ok) if ok else None,
        ok=len(ok),
        stated_accuracy={key: stated_right[key] / stated[key] for key in schema.properties if stated[key]},
    )
