"""One reading of a value in a text: what it means, where it is written, and how it was read.

Shared by the number and date readers (`numbers`, `dates`) and the `ValueFinder` that combines them,
so that what the checker accepts and what the enumeration lists are the same objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Literal

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
    (`derived`: "yesterday", "上周五"), in which case `anchor` says which reference date it was."""

    value: Decimal | date
    span: tuple[int, int]
    kind: Kind
    anchor: str | None = None


def inside(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    """True when `span` lies wholly within one of `spans`."""
    return any(start <= span[0] and span[1] <= end for start, end in spans)


def within(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    """True when `span` lies inside one of `spans` and is not all of it: a part of those words."""
    return any(start <= span[0] and span[1] <= end and span != (start, end) for start, end in spans)
