"""The units of a list that each hold one item, found from the text's layout, never by a model.

A small model asked to restate sixty lines at once lists a third of them (BENCHMARKS section 30);
asked for one line at a time it misses almost none. So a list is cut where its writer cut it
(tasks/long/layout.py reads the shapes):
- **messages**: a mail thread, one unit per message (a quoted or forwarded one too), from its `From:`
  header or "On ... wrote:" line to the next, with its signature;
- **rows**: a table's rows that carry a digit, each shown beside the table's header row; a repeated
  header row or a total row is no item;
- **lines**: a list of lines with amounts. Where most of them start with a date (a statement), a unit
  starts at each dated line, whose date is the item's; otherwise (a receipt) at each line with an
  amount, or at a name line whose quantity line ("2 @ £2.75", "0.915 kg @ £0.73/kg") follows. A unit
  takes the lines that continue it: a quantity line, an indented line (a wrapped description, a
  foreign-currency note). A blank line or a summary (a total, a balance, tax, change, tender,
  rounding) ends a unit, and on a receipt the first summary after the items that states a value
  ("TOTAL 9.00", or "TOTAL:" and "9.00" in an OCR'd till's boxes) ends the list (what follows is
  tender and change); a promotion under an item ("ITEM PROMO @12.99", "-2.57") is no unit. A line
  with no digit between units is a section heading ("PENDING TRANSACTIONS",
  "Payments and credits"): the units under it are shown it, so a model can tell that they hold no
  expense. A receipt OCR'd one box a line (a code, a quantity, each price and the description on lines
  of their own) is cut in item rows instead, each unit an item's boxes with its description
  (tasks/long/box_rows.py).
What is not in a unit is the **header** text (the vendor, the date, the card holder, the totals),
read once for the header fields: the text with the units taken out.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any, Literal

from formwork.schemas.annotations import DateOrder
from formwork.tasks.grounding.anchors import ANCHOR, anchored_reference, latest_stated_day
from formwork.tasks.long.box_rows import box_rows, states_value
from formwork.tasks.long.layout import (
    MESSAGE,
    QUOTED_MESSAGE,
    TABLE_SEPARATORS,
    Line,
    column_row,
    credited,
    lines_of,
    table_headers,
)
from formwork.tasks.long.parts import Span

Kind = Literal["messages", "rows", "lines"]
KINDS: tuple[Kind, ...] = ("messages", "rows", "lines")
DATED_SHARE = 0.6  # of the lines with amounts from the first dated one on: this many in a statement


@dataclass(frozen=True)
class Unit:
    """One unit of a list: its text in the whole (`start`..`end`), and what is shown beside it (the
    table's header row, the section heading above it), which it is never read from."""

    start: int
    end: int
    context: str = ""
    credit: bool = False  # its amount is money in (tasks.long.layout.credited)
    dated_line: int = 0  # a statement line's: the length of its first line, whose date is the item's

    @property
    def dates_in(self) -> tuple[int, int] | None:
        """Where the unit's date is read, in its own text: a statement's line is dated by the date
        that opens it (its column), never by a date in the booking text under it (a card payment's
        `2024-05-01T18:22` under `02.05.`), so every row's date means what the column says."""
        return (0, self.dated_line) if self.dated_line else None

    def text(self, whole: str) -> str:
        return whole[self.start : self.end]

    def to_whole(self, position: int) -> int:
        return self.start + position


@dataclass(frozen=True)
class Excerpt:
    """Pieces of the whole text read as one text (the header text: what stands around the units)."""

    spans: tuple[Span, ...]

    @property
    def start(self) -> int:
        return self.spans[0][0] if self.spans else 0

    @property
    def end(self) -> int:
        return self.spans[-1][1] if self.spans else 0

    def text(self, whole: str) -> str:
        return "".join(whole[a:b] for a, b in self.spans)

    def to_whole(self, position: int) -> int:
        for a, b in self.spans:
            if position < b - a:
                return a + position
            position -= b - a
        return self.end


@dataclass(frozen=True)
class Layout:
    """The units a text's list is read in (none where it shows no list), its header text, and where
    the list was cut when it had more units than are read (`limited`)."""

    kind: Kind | None
    units: tuple[Unit, ...]
    header: Excerpt
    cut_to: int | None = None

    def reading_meta(
        self, meta: dict[str, Any] | None, text: str, field: str, order: DateOrder | None = None
    ) -> dict[str, Any] | None:
        """The meta each piece of this list (a unit, a part) is read with: the record's, and where it gives
        no reference date, the latest day the list's header states (a statement's closing day), so a
        line's `02.05.` is read as a day of that statement's year (tasks/grounding/yearless.py). A mail
        message keeps its own `Date:` header, and a text with no list has no header to read. `order` is
        the schema's date order, for a header date its digits leave open."""
        if self.kind in (None, "messages") or anchored_reference(meta, field)[0] is not None:
            return meta
        stated = latest_stated_day(self.header.text(text), order)
        if stated is None:
            return meta
        return {**(meta or {}), field: stated[0].isoformat(), ANCHOR: stated[1]}

    def limited(self, most: int) -> Layout:
        """The first `most` units, cut after the last of them (the header text stays whole)."""
        if len(self.units) <= most:
            return self
        return replace(self, units=self.units[:most], cut_to=self.units[most - 1].end)


def _messages(text: str) -> list[Unit]:
    starts = sorted(
        {m.start() for m in MESSAGE.finditer(text)} | {m.start() for m in QUOTED_MESSAGE.finditer(text)}
    )
    units = []
    for start, end in itertools.pairwise([*starts, len(text)]):
        body = text[start:end].rstrip()
        if "\n" not in body.strip():  # a marker line alone ("-----Original Message-----"): the next has it
            continue
        units.append(Unit(start, start + len(body)))
    return units if len(units) >= 2 else []


def _rows(text: str) -> list[Unit]:
    units = []
    for table_start, header_end, table_end in table_headers(text):
        header = text[table_start:header_end].rstrip("\n")
        first = text[table_start:header_end].split("\n")[0].strip()
        for line in lines_of(text[header_end:table_end]):
            if line.digits and not line.summary and line.raw.strip() != first:
                units.append(Unit(header_end + line.start, header_end + line.end, header))
    return units


def _starts(lines: list[Line]) -> tuple[list[int], bool]:
    """The lines that start a unit, and whether the list is dated (a statement, not a receipt)."""
    priced = [i for i, line in enumerate(lines) if line.money and not line.summary and not line.quantity]
    first_dated = next((n for n, i in enumerate(priced) if lines[i].dated), len(priced))
    listed = priced[first_dated:]  # a summary of amounts may stand above a statement's lines
    dated = sum(lines[i].dated for i in listed) >= DATED_SHARE * len(listed) > 0
    if dated:  # a dated tax line is a charge of its own (a folio's "City tax"); a balance is none
        return [
            i for i, line in enumerate(lines)
            if line.money and line.dated and not line.totals and not line.quantity
        ], True  # fmt: skip
    named = [
        i for i, line in enumerate(lines[:-1])
        if not line.blank and not line.money and not line.summary and lines[i + 1].quantity
    ]  # fmt: skip
    valued = {i + 1 for i, line in enumerate(lines[:-1]) if line.adjustment and lines[i + 1].bare}
    items = [i for i in priced if not lines[i].adjustment and i not in valued]  # a promotion is no item
    return sorted({*items, *named}), False


def _lines(text: str) -> list[Unit]:
    lines = lines_of(text)
    starts, dated = _starts(lines)
    if not starts:
        return []
    rows = [] if dated else box_rows(lines)
    if rows:  # an OCR'd till, one box a line: a unit is an item's row (tasks/long/box_rows.py)
        return [Unit(lines[first].start, lines[last].end) for first, last in rows]
    units: list[Unit] = []
    first: Line | None = None  # the first line of the unit being gathered
    last, heading = 0, ""

    def close() -> None:
        if first is not None:
            lead = first.end - first.start if dated else 0
            units.append(Unit(first.start, lines[last].end, heading, dated_line=lead))

    above = [line for line in lines[: starts[0]] if not line.blank]
    if above and not above[-1].digits:  # the heading right above the list ("PAYMENTS AND CREDITS")
        heading = above[-1].shown.strip()
    opened = set(starts)
    for index in range(starts[0], len(lines)):
        line = lines[index]
        if index in opened:
            close()
            first, last = line, index
        elif line.blank or line.summary:
            close()
            first = None
            if line.summary and not dated and units and states_value(lines, index):
                break  # a receipt's list ends at its total: tender and change follow
        elif first is not None and (line.quantity or line.indent > first.indent or (dated and line.digits)):
            last = index  # it continues the unit: a quantity line, a wrapped line, a currency note
        else:
            close()
            first = None
            heading = line.shown.strip() if not line.digits else heading
        if dated and index >= starts[-1] and first is None:
            break
    close()
    return units


FINDERS = {"messages": _messages, "rows": _rows, "lines": _lines}


def _credits(text: str, units: list[Unit]) -> list[Unit]:
    """The units with their credit mark read from their first line (tasks.long.layout.credited),
    against the nearest row above that heads money columns and the heading shown with them."""
    lines = lines_of(text)
    marked, columns, at = [], None, 0
    for unit in units:
        while at < len(lines) and lines[at].start < unit.start:
            columns = lines[at] if column_row(lines[at]) else columns
            at += 1
        first = lines[at] if at < len(lines) and lines[at].start == unit.start else None
        tabled = any(sep in unit.context for sep in TABLE_SEPARATORS)
        header_row = lines_of(unit.context)[0] if tabled else columns
        heading = "" if tabled else unit.context
        marked.append(replace(unit, credit=first is not None and credited(first, header_row, heading)))
    return marked


def _header(text: str, units: list[Unit]) -> Excerpt:
    """The text with the units taken out, as pieces of the whole."""
    spans, at = [], 0
    for unit in units:
        if unit.start > at:
            spans.append((at, unit.start))
        at = max(at, unit.end + 1)  # and the newline after it
    if at < len(text):
        spans.append((at, len(text)))
    return Excerpt(tuple(spans))


def find_units(text: str, kind: Kind | None = None) -> Layout:
    """The units of the list `text` shows: of `kind`, or of the first kind its layout shows (messages,
    then table rows, then lines); none where it shows no list."""
    for name in (kind,) if kind else KINDS:
        units = FINDERS[name](text)
        if units and name != "messages":
            units = _credits(text, units)
        if units:
            return Layout(name, tuple(units), _header(text, units))
    return Layout(None, (), Excerpt(((0, len(text)),)))
