"""The values a record's text can back, per field: what grounded decoding lets the grammar choose from.

Selection beats generation for a small model: a grammar that allows a field only the values its text
holds turns writing an amount into choosing one, and a value it can only copy is grounded by
construction. The candidates come from the same reading as the grounding check (`record_values`:
one `ValueFinder` per record text, shared with `evidence.Source`, so dates and numbers are read once
per record whoever asks first), and each field keeps only the candidates its own checked node
accepts (type, pattern, format and `x-format`, min/maxLength, minimum/maximum, multipleOf: the
jsonschema validator and the semantic checks that validation runs), so what is proposed is what the
judge accepts. Per field rule (schemas.annotations):

- `value` numbers: every reading of every number, as JSON numbers;
- `value` dates: every date, relative ones resolved against the reference date, as ISO dates;
- `quote` strings: the spans people give as answers, up to the field's `maxLength`, each copied exactly
  as written (tasks.grounding.spans): e-mails and phones, the words after the cues the field's
  description names, capitalised runs, whole lines and their segments, adjacent lines joined, then
  word n-grams inside one line (CJK characters count as words), less those that cannot be the
  field's kind of value (a person's name with a title or a legal form, a line that joins two things
  with a separator, a company's website it is also named by, a fragment of an address laid out in
  lines: tasks.grounding.kinds), and for a company the text's own web domain names, only the spans
  that write that name (tasks.grounding.sites);
- `x-base-form` quote strings: each span also in its base form (the text's "eggs" offers "egg");
- an enum with `x-aliases`: the labels the text writes, when it writes any (tasks.grounding.aliases);
- null, where the schema allows it, and for a nullable free string (no pattern or format) the words
  models write for it ("null", "N/A": tasks.grounding.absent), read as null by the judge, within the
  field's share of the bound; other `none` fields (enums, booleans, derived values) keep their node.

Bounds. XGrammar's compile time grows with the number of enum strings in the schema, about 0.1 ms
each against the bundled model's 49k vocabulary (their length and `any_whitespace` matter little;
BENCHMARKS section 15), and a per-record schema is never in a cache; the formatting pass it serves
takes ~0.6-1.2 s on an idle embedded engine, so the grammar's share stays near 5% only with a few
hundred strings in all. Hence the bound is the compile budget, `MAX_TOTAL` strings per record
(COMPILE_BUDGET_MS / COMPILE_MS_PER_STRING), shared fairly (a field with fewer candidates keeps them
all, the rest is split evenly among the others), not a cut per field; each field's chosen in this
order so that the likely ones survive it: e-mails and phone numbers, then what the reasoning notes
mention (the model's own intent, when the notes are given), then the kinds of span people answer
with (tasks.grounding.spans.quote_spans), then n-grams, shorter before longer and earlier before
later. Numbers and dates keep text order after the ones the notes mention.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date
from decimal import Decimal
from functools import lru_cache
from typing import Any

import regex

from formwork.schemas.annotations import DateOrder, Rule, rule_for, value_types
from formwork.schemas.paths import EMAIL as EMAIL_SHAPE
from formwork.schemas.paths import semantic_errors
from formwork.schemas.validator import search_within, validator_class
from formwork.schemas.walk import walk
from formwork.tasks.grounding.absent import SPELLINGS
from formwork.tasks.grounding.aliases import Spans, written_labels
from formwork.tasks.grounding.cues import cues_for
from formwork.tasks.grounding.evidence import record_source
from formwork.tasks.grounding.kinds import fitting
from formwork.tasks.grounding.reading import RECORDS_KEPT
from formwork.tasks.grounding.spans import Mentions, base_forms, quote_spans
from formwork.tasks.grounding.value_words import ValueWords
from formwork.tasks.grounding.values import ValueFinder

# Bump when a change here or in the readers (tasks/grounding) changes which values are offered or accepted:
# every calibration names it (tasks.evaluation.key), so one measured before no longer applies. The
# judge's verdicts on the gold are recorded per version (key.JUDGE_VERDICTS): a test fails on a change
# without a bump. 4: a count that is only a line's price, and a statement line's own date (2026-12-06).
# 5: a line without its numbered bracket ("99 SPEED MART S/B" of "... (519537-X)"), a date in the
# schema's stated order (2026-12-07); no gold set's verdicts, nor any shipped calibration's gold's
# candidates, changed. 6: no span without a capital for a person in a text that capitalises names
# ("team", "client"; tasks.grounding.capitals), no span with a project's or client's label ("project
# Tulp"; cues.labelled): no gold set's verdicts changed, nor any gold value offered (2026-12-07).
# 7: no span for a person that begins with an honorific ("Ramón Ortiz", not "Dr. Ramón Ortiz";
# kinds.titled): no gold set's verdicts changed, nor any gold value offered (2026-12-07).
# 8: no span for a person that ends with a legal form ("Berger Elektro GmbH"), none for a person or a
# company that joins two things with a separator ("Serrurier - Witmark", "Super Place - superplace.com")
# or is a website the text spells out as a name ("miningoperator.fr" beside "Mining Operator"),
# only whole lines for an address in a text laid out in lines (tasks.grounding.kinds): no gold set's
# verdicts changed; one gold value is no longer offered, a SROIE company written with a separator
# (BENCHMARKS 49) (2026-12-07).
# 9: an address laid out in lines does not end at a comma the next line goes on from (kinds.continued);
# a website's hyphen may stand for a short word of the name it spells ("jasmin-lilas.com", "Jasmin et
# Lilas"; sites.spelled_out): no gold set's verdicts changed, nor any gold value offered (BENCHMARKS 50)
# (2026-12-07).
# 10: where a span writes the name the text's own e-mail or web domain spells ("Witmark" beside
# witmark.com), a company field is offered only such spans (sites.named_by_site): no gold set's verdicts
# changed; one hand-written gold organization is no longer offered (BENCHMARKS 50) (2026-12-07).
# 11: an address laid out in lines does not begin below a line that ends with a comma, nor end above a
# line with a postcode when it holds none itself (kinds.continued): receipts only; no gold set's verdicts
# changed, nor any gold value offered (BENCHMARKS 50) (2026-12-07).
READERS_VERSION = 11
COMPILE_MS_PER_STRING = 0.1  # XGrammar, per enum string, bundled vocabulary (BENCHMARKS section 15)
COMPILE_BUDGET_MS = 20.0  # a record's grammar compile: ~2-3% of an idle formatting pass of 0.6-1.2 s
MAX_TOTAL = int(COMPILE_BUDGET_MS / COMPILE_MS_PER_STRING)  # strings a record's grammar may hold
MAX_UNDECIDED = 3  # values a field's pattern may fail to decide in time before its search stops


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def admits(root: dict[str, Any], node: dict[str, Any], text: str) -> Callable[[Any], bool | None]:
    """Whether validation would accept a value at `node` (its checked form): the draft's jsonschema
    validator with formats, then the semantic checks. A string's own `maxLength`, `pattern` and e-mail
    shape are tried first, being necessary and far cheaper (a long text has thousands of spans).
    None: the pattern could not decide within its time budget (schemas.validator.search_within)."""
    check = _node_check(_Same(root), _Same(node))
    return lambda value: check(value, text)


@lru_cache(maxsize=256)
def _node_check(root: _Same, same: _Same) -> Callable[[Any, str], bool | None]:
    """`admits` for one schema node, built once per node, not per record (a validator and a pattern)."""
    node = same.node
    cls = validator_class(root.node)
    validator = cls(node, format_checker=cls.FORMAT_CHECKER)
    pattern = regex.compile(node["pattern"]) if isinstance(node.get("pattern"), str) else None
    email = "email" in (node.get("format"), node.get("x-format"))
    longest, shortest = node.get("maxLength"), node.get("minLength", 0)
    plain = _plain_string(node)

    def check(value: Any, text: str) -> bool | None:
        if isinstance(value, str):
            if (longest is not None and len(value) > longest) or (email and not EMAIL_SHAPE.match(value)):
                return False
            if pattern is not None and not (found := search_within(pattern, value)):
                return found
            if plain:  # all the validator and the semantic checks would test, tested
                return len(value) >= shortest
        return validator.is_valid(value) and not semantic_errors(node, value, text)

    return check


ANNOTATIONS = frozenset({"description", "title", "$comment", "default", "deprecated", "readOnly",
                         "writeOnly"})  # fmt: skip


def _plain_string(node: dict[str, Any]) -> bool:
    """A string node checked by its type and lengths alone (no pattern, format, enum, examples or
    branches): a span of the text, already cut to `maxLength`, needs only `minLength` tested, where
    the validator and the semantic checks cost ~0.1 ms a span (a record has hundreds)."""
    types = node.get("type")
    strings = types == "string" or (isinstance(types, list) and "string" in types)
    keys = {k for k in node if not k.startswith("x-") or k == "x-format"} - ANNOTATIONS
    return strings and keys <= {"type", "maxLength", "minLength"}


class _Same:
    """A schema node as a cache key: the same object, not an equal one (a loaded schema's bodies live
    as long as the run; keeping the node in the key keeps its id from being reused)."""

    def __init__(self, node: dict[str, Any]):
        self.node = node

    def __hash__(self) -> int:
        return id(self.node)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.node is self.node


def _mentioned_first(values: list[tuple[Any, str]], notes: str) -> list[Any]:
    """Values (each with the text that writes it) with the ones the notes mention first."""
    mentioned = Mentions(notes)
    said = [v for v, written in values if mentioned and (written in mentioned or str(v) in mentioned)]
    return [*said, *(v for v, _ in values)]


@lru_cache(maxsize=64)
def _kinds_of(root: _Same) -> frozenset[str]:
    return frozenset(_value_kinds(root.node))


@lru_cache(maxsize=64)
def _aliased_of(root: _Same) -> tuple[dict[str, Any], ...]:
    """Every enum node of the schema that declares `x-aliases` (a currency): its labels are read."""
    return tuple(n for _, n in walk(root.node) if isinstance(n.get("x-aliases"), dict) and "enum" in n)


@lru_cache(maxsize=RECORDS_KEPT)
def _label_spans(root: _Same, text: str) -> Spans:
    """Where the text writes a label of one of the schema's aliased enums (once per record)."""
    written = (written_labels(node, text) for node in _aliased_of(root))
    return tuple(sorted({span for labels in written for spans in labels.values() for span in spans}))


def _value_kinds(node: Any) -> set[str]:
    """Which kinds of `value` field the schema has anywhere: "number", "date"."""
    if isinstance(node, list):
        return set().union(*(_value_kinds(n) for n in node))
    if not isinstance(node, dict):
        return set()
    kinds = set()
    if rule_for(node) == "value" and "properties" not in node and "items" not in node:
        if value_types(node) & {"number", "integer"}:
            kinds.add("number")
        if node.get("format") in ("date", "date-time"):
            kinds.add("date")
    return kinds.union(*(_value_kinds(v) for v in node.values() if isinstance(v, dict | list)))


@lru_cache(maxsize=RECORDS_KEPT)
def _value_words(finder: ValueFinder, kinds: frozenset[str], labels: Spans) -> ValueWords:
    return ValueWords(kinds, finder, labels)  # once per record, for every attempt's grammar


def _pool(
    node: dict[str, Any], check: dict[str, Any], rule: Rule, finder: ValueFinder, notes: str,
    words: ValueWords, name: str, dates_in: tuple[int, int] | None,
) -> Iterable[Any] | None:  # fmt: skip
    """Every value `node` (the property `name`) could take under grounded decoding, likeliest first;
    None: keep the node. `check` is the same field in the checked body, which keeps the `x-`
    annotations; a date comes from `dates_in` where the text states one there."""
    types, text = value_types(node), finder.text
    if rule == "value" and types & {"number", "integer"}:
        numbers = (r for r in finder.number_readings() if isinstance(r.value, Decimal))
        readings = [r for r in numbers if not words.part_of_date(r.span)]
        return _mentioned_first([(_number(r.value), text[r.span[0] : r.span[1]]) for r in readings], notes)
    if rule == "value" and node.get("format") == "date":
        readings = [r for r in finder.date_readings() if isinstance(r.value, date)]
        inside = [r for r in readings if dates_in and dates_in[0] <= r.span[0] and r.span[1] <= dates_in[1]]
        readings = inside or readings
        return _mentioned_first([(r.value.isoformat(), text[r.span[0] : r.span[1]]) for r in readings], notes)
    if rule == "quote" and types == {"string"}:
        described = str(check.get("description", ""))
        cues = cues_for(described, name)  # a name's cues: a person, a company...
        every = quote_spans(text, int(node.get("maxLength", 200)), notes, cues)
        spans = (s for s in every if not words.hold(s) and not (cues and words.dated_or_priced(s)))
        spans = fitting(spans, text, described, name)  # tasks.grounding.kinds
        if check.get("x-base-form") is True:
            return (form for span in spans for form in (span, *base_forms(span)))
        return spans
    if rule == "none" and (written := written_labels(check, text)):
        return list(written)  # an aliased enum: only the labels the text writes (tasks.grounding.aliases)
    return None


def _bounded(pool: Iterable[Any], accepts: Callable[[Any], bool | None]) -> list[Any]:
    """The first MAX_TOTAL distinct values of `pool` that the field accepts (the record's share cuts
    further, `_shares`); the search stops at the `MAX_UNDECIDED`th value its pattern cannot decide in
    time, so a text of thousands of spans costs a field at most that many match budgets."""
    chosen: dict[Any, None] = {}
    undecided = 0
    for value in pool:
        key = (type(value), value)
        if key in chosen:
            continue
        verdict = accepts(value)
        undecided += verdict is None
        if undecided >= MAX_UNDECIDED:
            break
        if verdict:
            chosen[key] = value
            if len(chosen) >= MAX_TOTAL:
                break
    return list(chosen.values())


def grounded_body(
    body: dict[str, Any], text: str, reference: date | None = None, *, checked: dict[str, Any] | None = None,
    anchor: str | None = None, notes: str = "", dates_in: tuple[int, int] | None = None,
    date_order: DateOrder | None = None,
) -> dict[str, Any]:  # fmt: skip
    """`body` (the grammar body) with every `quote` or `value` field, at any depth, replaced by an enum
    of its candidates. `checked` is the body validation reads (the same tree with the keywords the
    grammar drops: `x-format`, `multipleOf`, and the rules: without it, a field marked `x-grounding:
    none`, such as a quantity that is 1 "when no number is given", would be narrowed to the text's
    numbers), `reference` and `anchor` the record's reference date as
    the judge gets them, `notes` the reasoning pass's text, which orders the candidates. `dates_in`
    is where a date field's value is read where the text states one there (a statement line's own
    dated line, not a card timestamp in the booking text under it), else anywhere; `date_order` is the
    schema's `x-date-order`, the only order a date the text leaves open is offered in."""
    finder = record_source(text, reference, anchor, date_order).values
    root = checked if checked is not None else body
    same = _Same(root)
    words = _value_words(finder, _kinds_of(same), _label_spans(same, text))
    chosen: list[tuple[dict[str, Any], list[Any], bool, list[str]]] = []  # enum, values, nullable, spelled

    def visit(node: Any, check: Any, inherited: Rule | None, name: str = "") -> Any:
        if not isinstance(node, dict):
            return node
        check = check if isinstance(check, dict) else node
        rule = rule_for(check, inherited)  # the grammar body has lost its x- keys; the checked one has them
        passed: Rule | None = "none" if check.get("x-grounding") == "none" else inherited
        if "properties" in node or "items" in node:
            copy = dict(node)
            if "properties" in node:
                inner = check.get("properties") or {}
                copy["properties"] = {
                    k: visit(v, inner.get(k), passed, k) for k, v in node["properties"].items()
                }
            if isinstance(node.get("items"), dict):
                copy["items"] = visit(node["items"], check.get("items"), passed, name)
            return copy
        pool = _pool(node, check, rule, finder, notes, words, name, dates_in)
        if pool is None:
            return node
        values = _bounded(pool, admits(root, check, text))
        nullable = "null" in (node.get("type") or []) or None in node.get("enum", [])
        if not values:
            return {"type": "null"} if nullable else node  # nothing to choose: only null, or as is
        enum: dict[str, Any] = {}
        spelled = [s for s in SPELLINGS if s not in values] if nullable and _plain_string(check) else []
        chosen.append((enum, values, nullable, spelled))
        return enum

    grounded = visit(body, root, None)
    sizes = [len(values) + len(spelled) for _, values, _, spelled in chosen]  # null's spellings count
    for (enum, values, nullable, spelled), share in zip(chosen, _shares(sizes), strict=True):
        enum["enum"] = [*values[: max(1, share - len(spelled))], *([None] if nullable else []), *spelled]
    return grounded


def _shares(sizes: list[int], total: int = MAX_TOTAL) -> list[int]:
    """How many candidates each field keeps so that all keep at most `total`: smallest first, each
    keeps all it has up to an even split of what is left (at least one)."""
    shares, left = [0] * len(sizes), total
    for k, i in enumerate(sorted(range(len(sizes)), key=sizes.__getitem__)):
        shares[i] = max(1, min(sizes[i], left // (len(sizes) - k)))
        left -= shares[i]
    return shares
