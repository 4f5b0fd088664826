"""One reading of a value in a text: what it means, where it is written, and how it was read.

Shared by the number and date readers (`numbers`, `dates`) and the `ValueFinder` that combines them,
so that what the checker accepts and what the enumeration lists are the same objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Literal

from formwork.schemas.annotations import DateOrder

Kind = Literal["exact", "normalised", "derived"]

# Texts whose readings each per-text cache keeps: above the records a GPU server keeps in flight (256
# in BENCHMARKS section 7). A record reads its text for its grammar, waits for the model, then reads it
# again for its judge; with a cache smaller than the records in flight (16 or 64 before), the others
# had evicted it by then, and the text was read twice (issue 31).
RECORDS_KEPT = 1024


@dataclass(frozen=True)
class Reading:
    """`value` is written at `span`: as the value's own canonical form (`exact`), in another form
    (`normalised`: "1.234,50", "三百二", "March 3rd 2020"), or only against a reference date
    (`derived`: "yesterday", "上周五"), in which case `anchor` says which reference date it was.
    `order` is set where the text's digits mean another day read the other way round ("03/06/2024"):
    the order this reading takes them in; None where the text settles it ("25/06/2024", "2024-06-03")."""

    value: Decimal | date
    span: tuple[int, int]
    kind: Kind
    anchor: str | None = None
    order: DateOrder | None = None


def in_order(readings: list[Reading], order: DateOrder | None) -> list[Reading]:
    """The readings a stated date order allows: all without one; with one, those the text settles and
    those read in that order ("03/06/2024" is 3 June day first, never 6 March)."""
    return readings if order is None else [r for r in readings if r.order in (None, order)]


def inside(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    """True when `span` lies wholly within one of `spans`."""
    return any(start <= span[0] and span[1] <= end for start, end in spans)


def contains(place: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    """True when one of `spans` lies wholly within `place` (`inside`, the other way round): "12 CAD,
    2024-11-02" holds the date's words."""
    return any(place[0] <= start and end <= place[1] for start, end in spans)


def within(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    """True when `span` lies inside one of `spans` and is not all of it: a part of those words."""
    return any(start <= span[0] and span[1] <= end and span != (start, end) for start, end in spans)


def overlaps(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    """True when `span` shares at least one character with one of `spans`."""
    return any(start < span[1] and span[0] < end for start, end in spans)


WORDS = re.compile(r"[^\W_]")  # a letter or digit of any script
OTHERS = re.compile(r"[^0]")


def word_mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` as a mask: "1" inside `spans`, "0" at every other letter or digit, " " elsewhere, so that
    whether a span of the text is made of those words (and what separates them) is one slice."""
    mask = list(OTHERS.sub(" ", WORDS.sub("0", text)))  # a "0" of the text is a digit: "0" either way
    for start, end in spans:
        mask[start:end] = "1" * (end - start)
    return "".join(mask)


def made_of(mask: str, span: tuple[int, int]) -> bool:
    """True when every letter and digit of `span` lies inside the spans `mask` was made from, and at
    least one does: "12 CAD" is made of an amount's "12" and a currency's "CAD"; "2 Coffee" is not."""
    piece = mask[span[0] : span[1]]
    return "1" in piece and "0" not in piece
