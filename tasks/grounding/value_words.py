"""The words that back a record's numbers, dates and written enum labels: no free string is made of them.

One phrase backs one field (tasks.grounding.copies): the judge refuses a quote made only of other
fields' words, a number that is part of a date, and a name that holds a date or a price, so grounded
decoding (tasks.grounding.candidates) never proposes them. Read once per record.
"""

from __future__ import annotations

from typing import Any

from formwork.tasks.grounding.aliases import Spans
from formwork.tasks.grounding.reading import contains, made_of, within, word_mask
from formwork.tasks.grounding.values import ValueFinder


class ValueWords:
    """The words that back the schema's other fields, which back no free string (one phrase backs one
    field, tasks.grounding.copies): a quote made only of numbers', dates' and written enum labels'
    words ("12" or "12 CAD" of "Parking, 12 CAD" beside an amount and a currency, "2024" of
    "2024-06-10" beside a date), a number that is part of a date ("12" of "12 Jan 2024"), and a name
    that holds a date or a price are refused by the judge, so they are never proposed. `labels` are
    the spans where the text writes a label of one of the schema's aliased enums."""

    def __init__(self, kinds: frozenset[str], finder: ValueFinder, labels: Spans):
        self.text = finder.text
        self.numbers = [r.span for r in finder.number_readings()] if "number" in kinds else []
        self.dates = [r.span for r in finder.date_readings()] if "date" in kinds else []
        self.labels = labels
        held = [*self.numbers, *self.dates, *labels]  # the words of every reading another field may take
        self.mask = word_mask(self.text, held) if held else ""

    def _places(self, value: str) -> list[tuple[int, int]]:
        """Where the text writes `value`: the non-overlapping places, as a search for the literal
        finds them ([] for a span the text does not write verbatim, such as a base form)."""
        places, start = [], self.text.find(value) if value else -1
        while start >= 0:
            places.append((start, start + len(value)))
            start = self.text.find(value, start + len(value))
        return places

    def part_of_date(self, span: tuple[int, int]) -> bool:
        return within(span, self.dates)

    def hold(self, value: Any) -> bool:
        """Whether every place the text writes `value` is made of other fields' words."""
        if not self.mask or not isinstance(value, str):
            return False
        places = self._places(value)
        return bool(places) and all(made_of(self.mask, place) for place in places)

    def dated_or_priced(self, value: str) -> bool:
        """Whether every place the text writes `value` holds a whole date, or a whole number and a
        written label (a price: "35 EUR", "$23.40"), which no name of a person, company or project
        does ("12 CAD, 2024-11-02, project Maple" as `who`, chosen by the bundled model)."""
        places = self._places(value) if self.mask else []
        numbers, dates, labels = self.numbers, self.dates, self.labels
        return bool(places) and all(
            contains(p, dates) or (contains(p, numbers) and contains(p, labels)) for p in places
        )
