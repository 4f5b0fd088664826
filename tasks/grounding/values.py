"""Find a number or a date in a text however it is written: the `value` rule of grounding.

A model asked for an amount writes `1234.5`; the text says "1.234,50 EUR". A model asked for a date
writes `2020-03-03`; the text says "March 3rd 2020", "3/3/20" or "2020年3月3日". Both are backed by
the text, so both must be found, with the span where they are written. Numbers are read from every
digit run with its possible separator conventions (a `,` or `.` followed by three digits may group
thousands or mark decimals; both readings are kept). Dates are read by a regex for numeric forms
(either day/month order when the text is ambiguous) and by `dateparser` for written ones (runs of
words around a month, weekday or relative word); an expression whose meaning depends on the day it
was written ("yesterday", "last Friday", "March 3") backs a value only against the record's
reference date, and then as `derived`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from functools import cache, cached_property
from typing import Literal

# A digit run with optional grouping/decimal separators: 1,234.50 | 1.234,50 | 1'234 | 1234,5 | 1 234 (nbsp).
NUMBER = re.compile(r"(?<![\d.,])\d+(?:[.,'\u00a0\u202f]\d+)*")
YMD = re.compile(r"(?<!\d)(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*日?(?!\d)")
AB_Y = re.compile(r"(?<!\d)(\d{1,2})\s*[-/.]\s*(\d{1,2})\s*[-/.]\s*(\d{4}|\d{2})(?!\d)")
ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
# Identifier shapes whose digit groups are no amount: an IBAN, a phone number (a leading + or 0, or an
# area code in brackets, and seven digits or more), a code of parts joined by - / _ # ("2024-0042").
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,}(?: ?[A-Z0-9]{1,4})?\b")
PHONE = re.compile(r"(?<![\w.,])(?:\+|\(?0|\(\d{2,5}\) ?)\d[\d ()./-]{5,}\d(?![\w])")
CODE = re.compile(r"(?<![\w.,])[A-Za-z0-9]+(?:[-/_#][A-Za-z0-9]+)+(?![\w])")
TIME = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?![\d:])")  # 12:30, 08:15:00
# dateparser is asked only about stretches that hold a word it could read as a date: a month, a weekday
# or a relative day in one of these languages; dateparser reads the few words around it.
LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl")  # numeric and CJK forms need no language
ENGLISH_RELATIVE = ("ago", "last", "next")  # "3 days ago", "last Friday"
WORD = re.compile(r"\w+(?:[./-]\w+)*")
MAX_WORDS = 5
# Two bases far apart: an expression that parses to different days against them is relative.
BASES = (datetime(2001, 6, 15, 12), datetime(2011, 2, 10, 12))


@cache
def date_words() -> frozenset[str]:
    """Month and weekday names and their abbreviations, and the words for yesterday, today and
    tomorrow, in every language of LANGUAGES, from dateparser's own locale data (lower case; words
    under three letters, such as "mo" or "sa", are left out: too common to be worth a parse)."""
    from dateparser.languages.loader import default_loader

    keys = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
            "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
            "saturday", "sunday")  # fmt: skip
    words = set(ENGLISH_RELATIVE)
    for code in LANGUAGES:
        info = default_loader.get_locale(code).info
        days = info.get("relative-type", {})
        for names in [*(info.get(key, []) for key in keys), *(days.get(k, []) for k in RELATIVE_DAYS)]:
            words.update(name.lower().rstrip(".") for name in names if " " not in name)
    return frozenset(word for word in words if len(word) >= 3)


RELATIVE_DAYS = ("1 day ago", "0 day ago", "in 1 day")


Kind = Literal["exact", "normalised", "derived"]


def inside(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    """True when `span` lies wholly within one of `spans`."""
    return any(start <= span[0] and span[1] <= end for start, end in spans)


@dataclass(frozen=True)
class ValueMatch:
    kind: Kind
    spans: tuple[tuple[int, int], ...]


def identifiers(text: str) -> list[tuple[int, int]]:
    """Spans of IBANs, phone numbers and joined codes: "call 0170 5551234" backs no 170, "Invoice
    2024-0042" no 42. A code counts when two of its parts hold digits, or one holds three or more
    beside a part of letters ("INV-0042"); "3-day" or "Zurich-Geneva" stay text."""
    spans = [m.span() for m in IBAN.finditer(text)]
    spans += [m.span() for m in PHONE.finditer(text) if sum(c.isdigit() for c in m.group()) >= 7]
    for m in CODE.finditer(text):
        parts = re.split(r"[-/_#]", m.group())
        numeric = [p for p in parts if any(c.isdigit() for c in p)]
        if len(numeric) >= 2 or (any(p.isalpha() for p in parts) and max(map(len, numeric), default=0) >= 3):
            spans.append(m.span())
    return spans


def _grouped(digits: list[str]) -> bool:
    """True when digit groups read as thousands: 1 to 3 digits first, exactly three in every group after."""
    return 1 <= len(digits[0]) <= 3 and all(len(group) == 3 for group in digits[1:])


def _readings(token: str) -> set[Decimal]:
    """Every number a written digit run can mean: "1,234" -> {1234, 1.234}, "12.5" -> {12.5} only.

    A separator groups thousands only where every group after it has exactly three digits and all
    grouping separators are the same character; the last `.` or `,`, written once, may be the decimal
    point. A run that starts with a zero ("0170", "007") is a code, not an amount: no reading."""
    parts = re.split(r"([.,'\u00a0\u202f])", token)
    digits, separators = parts[::2], parts[1::2]
    if len(digits[0]) > 1 and digits[0][0] == "0":
        return set()
    readings = set()
    if not separators:
        readings.add(Decimal(token))
    elif len(set(separators)) == 1 and _grouped(digits):
        readings.add(Decimal("".join(digits)))
    last = separators[-1] if separators else ""
    decimal = last in (".", ",") and last not in separators[:-1] and len(set(separators[:-1])) <= 1
    if decimal and (len(digits) == 2 or _grouped(digits[:-1])):
        readings.add(Decimal("".join(digits[:-1]) + "." + digits[-1]))
    return readings


def _as_decimal(value: float | int | str) -> Decimal | None:
    try:
        return abs(Decimal(str(value)))
    except InvalidOperation:
        return None


def _iso_date(value: str) -> date | None:
    match = ISO_DATE.match(value)
    if not match:
        return None
    try:
        return date(*(int(g) for g in match.groups()))
    except ValueError:
        return None


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


class ValueFinder:
    """The numbers and dates of one source text, read once and matched against many values."""

    def __init__(self, text: str, reference: date | None = None):
        self.text = text
        self.reference = reference
        self._parsed: dict[tuple[str, datetime, bool], date | None] = {}

    @cached_property
    def _numbers(self) -> list[tuple[set[Decimal], tuple[int, int]]]:
        """Every digit run with its readings, except the parts of a date or a time of day: the 12 of
        "2020-03-12" or "12:30" is not an amount, and a receipt is full of them."""
        taken = [span for _, span in self._numeric_dates] + [m.span() for m in TIME.finditer(self.text)]
        taken += identifiers(self.text)
        return [
            (_readings(m.group()), m.span())
            for m in NUMBER.finditer(self.text)
            if not inside(m.span(), taken)
        ]

    @cached_property
    def _numeric_dates(self) -> list[tuple[set[date], tuple[int, int]]]:
        found = []
        for m in YMD.finditer(self.text):
            day = _safe_date(*(int(g) for g in m.groups()))
            if day:
                found.append(({day}, m.span()))
        for m in AB_Y.finditer(self.text):
            a, b, y = (int(g) for g in m.groups())
            years = [y] if len(m.group(3)) == 4 else [2000 + y, 1900 + y]
            days = {d for year in years for d in (_safe_date(year, b, a), _safe_date(year, a, b)) if d}
            if days:
                found.append((days, m.span()))
        return found

    @cached_property
    def _words(self) -> list[tuple[int, int]]:
        return [m.span() for m in WORD.finditer(self.text)]

    def _runs(self, hit: int) -> list[tuple[int, int]]:
        """Every run of up to MAX_WORDS words that holds word `hit`; without a reference date, only
        runs with a digit (a day in words alone, "Friday", means a day only against a reference)."""
        words, runs = self._words, []
        for i in range(max(0, hit - MAX_WORDS + 1), hit + 1):
            for j in range(hit, min(i + MAX_WORDS, len(words))):
                span = (words[i][0], words[j][1])
                if self.reference is not None or any(c.isdigit() for c in self.text[span[0] : span[1]]):
                    runs.append(span)
        return runs

    def _written(self, wanted: date) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """(absolute, relative) spans of written phrases meaning `wanted`, one per date word.

        Each run of words around a month, weekday or relative word is read on its own (dateparser
        alone glues neighbours onto a date: "last Friday, 30"; "on March 3rd 2020 by"): the shortest
        run that means the day absolutely, else the longest that means it against the reference date.
        """
        absolute: set[tuple[int, int]] = set()
        relative: set[tuple[int, int]] = set()
        for hit, (start, end) in enumerate(self._words):
            if self.text[start:end].lower().rstrip(".") not in date_words():
                continue
            meant: dict[str, list[tuple[int, int]]] = {"absolute": [], "relative": []}
            for run in self._runs(hit):
                kind = self._meaning(self.text[run[0] : run[1]], wanted)
                if kind:
                    meant[kind].append(run)
            if meant["absolute"]:
                absolute.add(min(meant["absolute"], key=lambda r: r[1] - r[0]))
            elif meant["relative"]:
                relative.add(max(meant["relative"], key=lambda r: r[1] - r[0]))
        return sorted(absolute), sorted(relative)

    def _parse(self, phrase: str, base: datetime, past: bool = False) -> date | None:
        key = (phrase, base, past)
        if key not in self._parsed:
            import dateparser

            settings: dict = {"RELATIVE_BASE": base}
            if past:
                settings["PREFER_DATES_FROM"] = "past"
            when = dateparser.parse(phrase, settings=settings, languages=list(LANGUAGES))
            self._parsed[key] = when.date() if when else None
        return self._parsed[key]

    def _meaning(self, phrase: str, wanted: date) -> str | None:
        """ "absolute" or "relative" if the phrase means `wanted` (relative: against the reference)."""
        first, second = (self._parse(phrase, base) for base in BASES)
        if first is None:
            return None
        if first == second:
            return "absolute" if first == wanted else None
        if self.reference is None:
            return None
        base = datetime(self.reference.year, self.reference.month, self.reference.day, 12)
        return "relative" if self._parse(phrase, base, past=True) == wanted else None

    def number(self, value: float | int | str) -> ValueMatch | None:
        wanted = _as_decimal(value)
        if wanted is None:
            return None
        spans = tuple(span for readings, span in self._numbers if wanted in readings)
        if not spans:
            return None
        exact = all(self.text[s:e] == str(value) for s, e in spans[:1])
        return ValueMatch("exact" if exact else "normalised", spans)

    def date(self, value: str) -> ValueMatch | None:
        wanted = _iso_date(value)
        if wanted is None:
            return None
        iso = wanted.isoformat()
        exact = tuple((m.start(), m.end()) for m in re.finditer(re.escape(iso), self.text))
        if exact:
            return ValueMatch("exact", exact)
        spans = tuple(span for days, span in self._numeric_dates if wanted in days)
        if spans:
            return ValueMatch("normalised", spans)
        absolute, relative = self._written(wanted)
        if absolute:
            return ValueMatch("normalised", tuple(absolute))
        if relative:
            return ValueMatch("derived", tuple(relative))
        return None
