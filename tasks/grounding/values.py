"""Find a number or a date in a text however it is written: the `value` rule of grounding.

A model asked for an amount writes `1234.5`; the text says "1.234,50 EUR". A model asked for a date
writes `2020-03-03`; the text says "March 3rd 2020", "3/3/20" or "2020年3月3日". Both are backed by
the text, so both must be found, with the span where they are written.

The reader enumerates every reading of the text once (`number_readings`, `date_readings`: what each
written number or date can mean, where, and how it was read); the checkers `number` and `date` only
look a value up in that enumeration, so what grounding accepts and what a candidate generator may
propose are one and the same list. The readers themselves live in `numbers` and `dates`.

`record_values` is that enumeration for one record: the formatting grammar's candidates
(`candidates`) and the grounding check (`evidence.Source`) both take it from there, so a record's
dates and numbers (the costliest reading: dateparser) are read once, not once per use and attempt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from functools import cached_property, lru_cache

from formwork.schemas.annotations import DateOrder
from formwork.tasks.grounding.anchors import stated_reference
from formwork.tasks.grounding.cjk_dates import cjk_readings, month_day_spans
from formwork.tasks.grounding.dates import WrittenDates, numeric_readings
from formwork.tasks.grounding.day_parts import day_part_readings
from formwork.tasks.grounding.numbers import digit_readings
from formwork.tasks.grounding.numerals import han_readings, word_readings
from formwork.tasks.grounding.ordinal_days import ordinal_day_spans, ordinal_readings
from formwork.tasks.grounding.reading import RECORDS_KEPT, Kind, Reading, in_order, inside
from formwork.tasks.grounding.yearless import yearless_readings

__all__ = ["Kind", "Reading", "ValueFinder", "ValueMatch", "inside", "record_values"]

ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
RANK = {"exact": 0, "normalised": 1, "derived": 2}


@dataclass(frozen=True)
class ValueMatch:
    kind: Kind
    spans: tuple[tuple[int, int], ...]
    anchor: str | None = None  # derived dates: the reference date that grounded them


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


def _best(readings: list[Reading]) -> ValueMatch | None:
    """The match of the best kind among a value's readings (exact before normalised before derived)."""
    if not readings:
        return None
    kind = min((r.kind for r in readings), key=RANK.__getitem__)
    chosen = [r for r in readings if r.kind == kind]
    return ValueMatch(kind, tuple(dict.fromkeys(r.span for r in chosen)), chosen[0].anchor)


class ValueFinder:
    """The numbers and dates of one source text, read once and matched against many values.

    `reference` is the day the text was written, against which "yesterday" is read; `anchor` says
    where it came from (a meta field, a mail header, a line of the text) and goes into the evidence.
    `order` is the schema's date order (`x-date-order`): a date its digits leave open is read only so."""

    def __init__(
        self,
        text: str,
        reference: date | None = None,
        anchor: str | None = None,
        order: DateOrder | None = None,
    ):
        self.text = text
        self.reference = reference
        self.anchor = anchor if reference is not None else None
        self.order = order

    @cached_property
    def _numeric_dates(self) -> list[Reading]:
        return in_order(numeric_readings(self.text), self.order)

    @cached_property
    def _written_dates(self) -> list[Reading]:
        written = WrittenDates(self.text, self.reference, self.anchor).readings()
        written += cjk_readings(self.text, self.reference, self.anchor)
        written += day_part_readings(self.text, self.reference, self.anchor)
        written += yearless_readings(self.text, self.reference, self.anchor)
        return written + ordinal_readings(self.text, self.reference, self.anchor)

    @cached_property
    def _han(self) -> list[Reading]:
        return han_readings(self.text)

    @cached_property
    def _digits(self) -> list[Reading]:
        """Digit runs' readings, except the digits of a date ("2020-03-12", "12月5号", "the 3rd") or
        of a CJK numeral ("1.2万": the 1.2 is part of 12000, not an amount of its own)."""
        taken = [r.span for r in self._numeric_dates + self._han] + month_day_spans(self.text)
        taken += ordinal_day_spans(self.text)
        return digit_readings(self.text, taken)

    @cached_property
    def _words(self) -> list[Reading]:
        return word_readings(self.text)

    @property
    def _numbers(self) -> list[Reading]:
        return self._digits + self._han + self._words

    def number_readings(self) -> list[Reading]:
        """Every reading of every number the text backs."""
        return list(self._numbers)

    def date_readings(self) -> list[Reading]:
        """Every date the text backs, relative ones resolved against the reference date."""
        return self._numeric_dates + self._written_dates

    def number(self, value: float | int | str) -> ValueMatch | None:
        wanted = _as_decimal(value)
        if wanted is None:
            return None
        # Digits and numerals first: number words (the costliest reader) are read only when needed;
        # the values accepted are still exactly those number_readings() lists.
        match = _best([r for r in self._digits + self._han if r.value == wanted])
        match = match or _best([r for r in self._words if r.value == wanted])
        if match is None:
            return None
        exact = self.text[match.spans[0][0] : match.spans[0][1]] == str(value)
        return ValueMatch("exact" if exact else "normalised", match.spans)

    def date(self, value: str) -> ValueMatch | None:
        wanted = _iso_date(value)
        if wanted is None:
            return None
        numeric = _best([r for r in self._numeric_dates if r.value == wanted])
        return numeric or _best([r for r in self._written_dates if r.value == wanted])


@lru_cache(maxsize=RECORDS_KEPT)
def record_values(
    text: str, reference: date | None = None, anchor: str | None = None, order: DateOrder | None = None
) -> ValueFinder:
    """The one reading of a record's text, shared by its candidates and its grounding check (and by
    every attempt); kept for the last RECORDS_KEPT texts. `reference` comes from the record (`anchor` says
    where: "meta reference_date"); without one, a date the text states as its own ("Sent on
    2024-06-10", 今天是…) is used, and the evidence says so."""
    if reference is None and (stated := stated_reference(text, order)):
        reference, anchor = stated
    return ValueFinder(text, reference, anchor or ("given" if reference else None), order)


def dates_compete(
    text: str, reference: date | None = None, anchor: str | None = None, order: DateOrder | None = None
) -> bool:
    """Whether the text states a date outright and also one relative to its reference ("Sent on 10 June:
    taxi yesterday"): the case where both readings of a small model chose the sending day."""
    kinds = {r.kind == "derived" for r in record_values(text, reference, anchor, order).date_readings()}
    return kinds == {True, False}
