"""Evidence for every extracted value: where the SOURCE text backs it, or that it does not.

A grammar guarantees syntax, never truth: a small model writes totals and dates that are on no receipt,
or copies the example from the schema's description. The one check every value can get is whether the
record's own text backs it, so each non-null value is looked up in the source text only (never in the
reasoning notes, never in the schema) under a rule taken from the field's `x-grounding` annotation:

- `quote` (default for free strings): the value is a span of the text, exactly, or after folding case,
  whitespace and punctuation (Unicode-aware, so CJK and other scripts work), or digit for digit for a
  phone number, or (a field marked `x-base-form`: "the item, singular") an inflection of it by
  simplemma's lemmas, or else a RapidFuzz alignment above `FUZZY_THRESHOLD` (fast on long texts,
  unlike difflib aligners; never for identifiers);
- `value` (default for numbers and `format: date` strings): the number or date in any written form
  (see `tasks.grounding.values`);
- `none` (default for enums, booleans and fields derived by design): no span needed.

Arrays and objects are walked; evidence is keyed by path (`items[2].name`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from functools import cached_property, lru_cache
from typing import Any, Literal

from formwork.schemas.annotations import DateOrder, Rule, rule_for
from formwork.tasks.grounding.aliases import written_labels
from formwork.tasks.grounding.reading import RECORDS_KEPT
from formwork.tasks.grounding.values import ValueFinder, record_values

Kind = Literal["exact", "normalised", "fuzzy", "derived", "none"]
FUZZY_THRESHOLD = 90.0  # RapidFuzz ratio (0-100) of the value against the aligned, word-extended span
FUZZY_MIN_CHARS = 4  # shorter values must match exactly or normalised: fuzzy hits on them are noise
MAX_SPANS = 8
PHONE = re.compile(r"^\+?[\d\s().\-/]+$")
PHONE_IN_TEXT = re.compile(r"\+?\d[\d\s().\-/]*\d")
ISO_LIKE = re.compile(r"^\d{4}-\d{2}-\d{2}")
LEMMA_LANGUAGES = ("en", "de", "es", "fr", "it", "pt", "nl")  # the languages of the gold sets
NUMERIC = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Evidence:
    """What the source says about one value: how it matched, where, and whether that backs it."""

    path: str
    value: Any
    rule: Rule
    kind: Kind
    spans: tuple[tuple[int, int], ...] = ()
    quote: str = ""
    score: float = 0.0
    grounded: bool = False
    confidence: float | None = None  # enums and booleans: the formatting pass's probability
    anchor: str | None = None  # a derived date: which reference date grounded it
    engine: str | None = None  # the engine kind the confidence came from (local, vllm, openai:<dialect>)
    logprob_mode: str | None = None  # masked | renormalised | none: what the confidence is

    def as_row(self) -> dict[str, Any]:
        """The JSON stored in `results.evidence`, one dict per value."""
        row = {
            "path": self.path, "value": self.value, "rule": self.rule, "kind": self.kind,
            "spans": [list(s) for s in self.spans], "quote": self.quote, "score": round(self.score, 1),
            "grounded": self.grounded,
        }  # fmt: skip
        if self.confidence is not None:
            row["confidence"] = round(self.confidence, 4)
        if self.anchor is not None:
            row["anchor"] = self.anchor
        if self.engine is not None:
            row |= {"engine": self.engine, "logprob_mode": self.logprob_mode}
        return row


def _spaced_script(ch: str) -> bool:
    """False for scripts written without spaces between words (CJK, kana, hangul, Thai...)."""
    code = ord(ch)
    return not (0x0E00 <= code <= 0x0EFF or 0x1000 <= code <= 0x109F or 0x1780 <= code <= 0x17FF
                or code >= 0x2E80)  # fmt: skip


def _fold_char(ch: str) -> str:
    """Latin, Greek and Cyrillic lose their accents ("José" is "jose"); other scripts keep every mark
    (a kana's voicing mark changes the sound, a Hangul syllable stays whole)."""
    if ord(ch) < 0x0530:
        return "".join(
            c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c)
        ).casefold()
    return unicodedata.normalize("NFKC", ch).casefold()


def fold(text: str) -> tuple[str, list[int]]:
    """NFKC, case-folded text with punctuation and whitespace runs as one space; where each char came from."""
    chars: list[str] = []
    where: list[int] = []
    gap = False
    for i, ch in enumerate(text):
        if ch.isascii():
            if ch.isalnum() or ch in "$%&+=@#*<>^|~`":
                if gap and chars:
                    chars.append(" ")
                    where.append(i)
                chars.append(ch.lower())
                where.append(i)
                gap = False
            else:
                gap = True
            continue
        if unicodedata.category(ch)[0] in "PZC":
            gap = True
            continue
        if gap and chars:
            chars.append(" ")
            where.append(i)
        gap = False
        for folded in _fold_char(ch):
            chars.append(folded)
            where.append(i)
    return "".join(chars), where


def _bounded(text: str, start: int, end: int) -> bool:
    """A match must not cut a word of a spaced script in two ("Al" is not in "Also")."""

    def joined(a: str, b: str) -> bool:
        return a.isalnum() and b.isalnum() and _spaced_script(a) and _spaced_script(b)

    return not (start > 0 and joined(text[start - 1], text[start])) and not (
        end < len(text) and joined(text[end - 1], text[end])
    )


class Source:
    """One record's text, prepared once (folded, numbers and dates read) for all its values."""

    def __init__(self, text: str, values: ValueFinder | None = None):
        """`values` is the record's one reading of its numbers and dates (`record_values`: with its
        reference date and date order), shared with the candidates; by default the text's own."""
        self.text = text
        self.values = values or record_values(text)

    @cached_property
    def _folding(self) -> tuple[str, list[int]]:
        return fold(self.text)  # only when a value is not written verbatim: most are

    @property
    def folded(self) -> str:
        return self._folding[0]

    @property
    def where(self) -> list[int]:
        return self._folding[1]

    def _unfold(self, start: int, end: int) -> tuple[int, int]:
        return self.where[start], self.where[end - 1] + 1

    def _occurrences(self, haystack: str, needle: str) -> list[tuple[int, int]]:
        spans = []
        start = haystack.find(needle)
        while start >= 0 and len(spans) < MAX_SPANS:
            if _bounded(haystack, start, start + len(needle)):
                spans.append((start, start + len(needle)))
            start = haystack.find(needle, start + 1)
        return spans

    def quote(self, value: str, base_form: bool = False) -> tuple[Kind, tuple[tuple[int, int], ...], float]:
        """Find a string: exact, normalised, phone digits, then fuzzy; ("none", (), best score) if absent.

        A blank string is no value. An identifier (a value with a digit, an `@`, or no space: an
        e-mail, a reference number, one word) matches exactly or normalised, never fuzzily: one
        letter or digit off is another address or another invoice. `base_form`: the schema asks for
        the base form ("x-base-form"), so the text's inflected form backs it (egg: "eggs", Ei: "Eier")."""
        if not value.strip():
            return "none", (), 0.0
        exact = self._occurrences(self.text, value)
        if exact:
            return "exact", tuple(exact), 100.0
        digits = re.sub(r"\D", "", value)
        if PHONE.match(value) and len(digits) >= 5:
            spans = self._phone(digits)
            return ("normalised", spans, 100.0) if spans else ("none", (), 0.0)
        folded, _ = fold(value)
        if not folded:
            return "none", (), 0.0
        normalised = self._occurrences(self.folded, folded)
        if normalised:
            return "normalised", tuple(self._unfold(s, e) for s, e in normalised), 100.0
        inflected = self._inflected(folded.split()) if base_form else ()
        if inflected:
            return "normalised", inflected, 100.0
        if any(c.isdigit() for c in value) or "@" in value or not any(c.isspace() for c in value.strip()):
            return "none", (), 0.0
        return self._fuzzy(folded)

    @cached_property
    def _lemmas(self) -> list[tuple[tuple[int, int], frozenset[str]]]:
        """Each word of the text with its lemmas in every language of LEMMA_LANGUAGES (simplemma)."""
        import simplemma

        words = []
        for m in re.finditer(r"\w+", self.text):
            word = m.group()
            lemmas = {fold(simplemma.lemmatize(word, lang=lang))[0] for lang in LEMMA_LANGUAGES}
            words.append((m.span(), frozenset(lemmas | {fold(word)[0]})))
        return words

    def _inflected(self, wanted: list[str]) -> tuple[tuple[int, int], ...]:
        """Spans where consecutive words of the text are inflections of the words `wanted`."""
        words, n, spans = self._lemmas, len(wanted), []
        for i in range(len(words) - n + 1):
            if all(wanted[k] in words[i + k][1] for k in range(n)):
                spans.append((words[i][0][0], words[i + n - 1][0][1]))
        return tuple(spans[:MAX_SPANS])

    def _phone(self, digits: str) -> tuple[tuple[int, int], ...]:
        """Phone numbers compare digits; a text number may carry a country code the value dropped."""
        spans = []
        for match in PHONE_IN_TEXT.finditer(self.text):
            found = re.sub(r"\D", "", match.group())
            if found == digits or (len(digits) >= 7 and found.endswith(digits)):
                spans.append(match.span())
        return tuple(spans[:MAX_SPANS])

    def _whole_words(self, start: int, end: int) -> tuple[int, int]:
        """Widen a span of the folded text to whole words of spaced scripts, without edge spaces."""
        text = self.folded
        start, end = max(start, 0), min(end, len(text))
        while start > 0 and not _bounded(text, start, len(text)):
            start -= 1
        while end < len(text) and not _bounded(text, 0, end):
            end += 1
        while start < end and text[start] == " ":
            start += 1
        while end > start and text[end - 1] == " ":
            end -= 1
        return start, end

    def _fuzzy(self, folded: str) -> tuple[Kind, tuple[tuple[int, int], ...], float]:
        from rapidfuzz import fuzz

        if len(folded) < FUZZY_MIN_CHARS:
            return "none", (), 0.0
        aligned = fuzz.partial_ratio_alignment(folded, self.folded)
        if aligned is None:
            return "none", (), 0.0
        start, end = self._whole_words(aligned.dest_start, aligned.dest_end)
        score = fuzz.ratio(folded, self.folded[start:end])
        for wider in (self._whole_words(start - 2, end), self._whole_words(start, end + 2)):
            wider_score = fuzz.ratio(folded, self.folded[wider[0] : wider[1]])
            if wider_score > score:  # the alignment may leave out a short word at an edge ("O'Brien")
                (start, end), score = wider, wider_score
        if score < FUZZY_THRESHOLD:
            return "none", (), score
        return "fuzzy", (self._unfold(start, end),), score


@lru_cache(maxsize=RECORDS_KEPT)
def record_source(
    text: str, reference: date | None = None, anchor: str | None = None, order: DateOrder | None = None
) -> Source:
    """The one `Source` of a record's text, shared by its grammar's candidates and by the judge of
    every attempt. Kept for `RECORDS_KEPT` texts, above the records a GPU server keeps in flight (256
    in BENCHMARKS section 7): with fewer, a record's reading was evicted by the others' between its
    grammar and its judge, and read again."""
    return Source(text, record_values(text, reference, anchor, order))


def _value_match(source: Source, node: dict[str, Any], value: Any) -> tuple[bool, Any]:
    """(is this a number or date?, its match or None) under the `value` rule."""
    if not isinstance(value, str):
        return True, source.values.number(value)
    if node.get("format") in ("date", "date-time") or ISO_LIKE.match(value):
        return True, source.values.date(value)
    if NUMERIC.fullmatch(value.strip()):
        return True, source.values.number(value.strip())
    return False, None  # a plain string under `value`: quoted like any other


def _check(source: Source, node: dict[str, Any], value: Any, path: str, rule: Rule) -> Evidence:
    if isinstance(value, str) and not value.strip() and rule != "none":
        return Evidence(path, value, rule, "none")  # a blank string is no value: never backed
    if rule == "none":
        written = written_labels(node, source.text).get(value)  # an aliased enum's label the text writes
        if written:
            return Evidence(path, value, rule, "exact", written, source.text[slice(*written[0])], 100.0, True)
        return Evidence(path, value, rule, "none", grounded=True, score=100.0)
    if rule == "value":
        is_value, match = _value_match(source, node, value)
        if match is not None:
            quote = source.text[match.spans[0][0] : match.spans[0][1]]
            spans = match.spans[:MAX_SPANS]
            return Evidence(path, value, rule, match.kind, spans, quote, 100.0, True, anchor=match.anchor)
        if is_value:
            return Evidence(path, value, rule, "none")
    kind, spans, score = source.quote(str(value), base_form=node.get("x-base-form") is True)
    if kind == "none":
        return Evidence(path, value, rule, "none", score=score)
    return Evidence(path, value, rule, kind, spans, source.text[spans[0][0] : spans[0][1]], score, True)


def ground(
    body: dict[str, Any], data: Any, text: str, reference: date | None = None, source: Source | None = None,
    anchor: str | None = None, date_order: DateOrder | None = None,
) -> list[Evidence]:  # fmt: skip
    """Evidence for every non-null value of `data` (validated against `body`), from `text` alone;
    `anchor` says where `reference` came from, and goes into each derived date's evidence;
    `date_order` is the schema's `x-date-order`, for dates the text leaves open."""
    source = source or record_source(text, reference, anchor, date_order)
    found: list[Evidence] = []

    def walk(node: dict[str, Any], value: Any, path: str, inherited: Rule | None) -> None:
        if value is None:
            return
        rule = rule_for(node, inherited)
        passed: Rule | None = "none" if node.get("x-grounding") == "none" else inherited
        if isinstance(value, dict):
            for key, child in (node.get("properties") or {}).items():
                walk(child, value.get(key), f"{path}.{key}" if path else key, passed)
        elif isinstance(value, list):
            item = node.get("items") if isinstance(node.get("items"), dict) else {}
            for i, element in enumerate(value):
                walk(item, element, f"{path}[{i}]", passed)
        else:
            found.append(_check(source, node, value, path, rule))

    walk(body, data, "", None)
    return found
