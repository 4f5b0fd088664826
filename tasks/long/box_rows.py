"""An OCR'd till's item rows, where every box of the receipt stands on a line of its own.

OCR that gives each box its own line (SROIE's, a phone's scan) turns an item row into a run of short
lines: a code, a quantity, the prices, a tax code, and the description before or after them
("9555067700208", "10", "10.57", "0.00", "105.66 *", "- IK YELLOW 70GRAMS"). Cut at each amount, such a
receipt gave 2.3 units per item, most of them a price with no name, and the name stood in no unit
(benchmarks/item_lines.py). Here a unit is one row: the boxes (lines of numbers, amounts and codes of
three letters or fewer: "1X", "SR", "ZRL", "FG-A00019") joined with the description lines beside them.

Which side the description stands on is read from where the list ends and begins: a till that prints
it after the boxes ends its list with a description line; one that prints it before ends with boxes,
or opens its list with a description that starts with a quantity or the item's code ("1 UNAGI DON",
"26.00 S"). Where it stands before them, a description wrapped under the boxes ("BRACKET(END)") stays
with its row when the next one opens with a quantity or a code ("2 3/4\" TOWEL ROD", "(V02) SOUR").
A receipt is read so only where most of its amounts before the total are boxes: a receipt whose lines
hold a name and a price each ("Milk 1.15") keeps its cutting (tasks/long/units.py). A field ("TYPE:"
and "10", "MTD RC AT K074 : 111.90"), a promotion and its value, or a blank line ends a row and opens
none.
"""

from __future__ import annotations

import itertools
import re
from typing import Literal

from formwork.tasks.long.layout import Line

Kind = Literal["box", "price", "text", "field", "break"]
Row = tuple[int, int]  # the first and last line of a row, inclusive

# A box: a number or an amount (a currency or a tax code glued on: "RM18.80", "@RM6.90", "53.40SR", "1X",
# "3X8.00"), a code ("FG-A00019", "K074"), a tax code or a mark of three letters or fewer ("SR", "ZRL",
# ".S", "*", "@").
BOX_WORD = re.compile(
    r"[-+*(@]?(?:RM|S\$|[$£€¥])?[\d.,/%@:*()#'+-]*\d[\d.,/%@:*()#'+xX×-]*[A-Za-z]{0,3}[)*]?"
    r"|[A-Za-z]{1,3}-?[A-Za-z]?\d{3,}|\.?[A-Za-z]{1,3}|[*:@x×=-]"
)
FIELD = re.compile(r"^[^:]*[A-Za-z][^:]*\s:|:\s*$")  # "MTD RC AT K074 : 111.90", "TYPE:"
NUMBER = re.compile(r"\s*\d+\s*")  # a quantity or an article number ("2", "070100004"), no tax code
ARTICLE = re.compile(r"\d{4,}")  # an article number's digits ("0025679 U", "1812")
SHAPE = (re.compile(r"\d+"), re.compile(r"[A-Za-z]+"))  # a box's shape: its digits and letters as 9 and A
QUANTITY_LEAD = re.compile(r"^\s*\d+(?:[.,]\d+)?\s+\S")  # "2 3/4\" TOWEL ROD", "1 SCREW"
# A description that opens its item, a quantity or the item's code first ("1 UNAGI DON", "(T02) BRAISED
# PORK"): standing right above the first boxes, it says the till prints descriptions before the boxes.
LEAD = re.compile(r"^\s*(?:\d+(?:[.,]\d+)?|\(?[A-Z]{1,3}\d{2,}[A-Z]?\)?)\s+[A-Za-z(]")


def states_value(lines: list[Line], index: int) -> bool:
    """Whether the summary at `index` states a value: a digit on its line, an amount alone on one of the
    next two lines with more than punctuation, or a count alone under a label ("TOTAL QTY:", "25"), as
    an OCR'd till prints "TOTAL:" and "9.00", "SUBTOTAL", ":" and "81.80", or "TOTAL INC. GST", "6%:"
    and "758.70" in boxes of their own. A column named "TOTAL(RM) TAX" over a quantity, or a "TAX
    INVOICE" title under an address that reads as an amount ("31,31A, JALAN HANG TUAH 9,"), states none
    and ends no list."""
    if lines[index].digits:
        return True
    after = [line for line in lines[index + 1 :] if any(c.isalnum() for c in line.shown)][:2]
    counted = bool(after) and lines[index].shown.rstrip().endswith(":") and after[0].shown.strip().isdigit()
    return counted or any(line.bare for line in after)


def _ends(lines: list[Line], kinds: list[Kind], index: int) -> bool:
    """Whether the line at `index` ends the rows: a summary that states a value, the value perhaps a price
    box with its currency ("TOTAL", "RM 33.92")."""
    if not lines[index].summary:
        return False
    after = next((n for n in range(index + 1, len(lines)) if any(c.isalnum() for c in lines[n].shown)), None)
    return states_value(lines, index) or (after is not None and kinds[after] == "price")


def kind_of(line: Line) -> Kind:
    """What a line is in a row: a box (a price where it holds an amount), a description, a field, or a
    break (a blank line, a summary, a promotion)."""
    if line.blank or line.summary or line.adjustment:
        return "break"
    if FIELD.search(line.shown):
        return "field"
    words = line.shown.split()
    if all(BOX_WORD.fullmatch(word) for word in words) and (line.digits or len(words) == 1):
        return "price" if line.money else "box"
    return "text"


def _valued(lines: list[Line], kinds: list[Kind], index: int) -> bool:
    """Whether the box at `index` is the value of the line above: an amount under a summary ("BALANCE
    BEFORE", "RM 1.90"), a box under a promotion ("ITEM PROMO @12.99", "-2.57") or a label ("TYPE:",
    "10"). It belongs to no row and opens none."""
    if index == 0 or kinds[index] not in ("box", "price"):
        return False
    above = lines[index - 1]
    labelled = above.adjustment or (kinds[index - 1] == "field" and above.shown.rstrip().endswith(":"))
    return labelled or (above.summary and kinds[index] == "price")


def _runs(lines: list[Line], kinds: list[Kind], start: int, stop: int) -> list[tuple[str, list[int]]]:
    """The lines from `start` to `stop` as runs of boxes ("B") and of descriptions ("T"), with a break
    ("|") where a field, a summary, a promotion (each with the value under it) or a blank line stands."""
    runs: list[tuple[str, list[int]]] = []
    index = start
    while index < stop:
        kind = kinds[index]
        if kind in ("break", "field"):
            runs.append(("|", []))
            index += 2 if index + 1 < stop and _valued(lines, kinds, index + 1) else 1
            continue
        mark = "T" if kind == "text" else "B"
        if runs and runs[-1][0] == mark:
            runs[-1][1].append(index)
        else:
            runs.append((mark, [index]))
        index += 1
    return [(mark, piece) for mark, run in runs for piece in (_split(lines, run) if mark == "B" else [run])]


def _shape(line: Line) -> str:
    return SHAPE[1].sub("A", SHAPE[0].sub("9", line.shown.strip()))


def _split(lines: list[Line], run: list[int]) -> list[list[int]]:
    """A run of boxes with no description between its rows (OCR printed it elsewhere, or it reads as
    boxes: "10'2X3"), cut where the shapes of its first two lines come again ("0025679 U", "3X8.00",
    "24.00 S", "0025679 U", "1X7.00", "7.00 S"); whole where a piece would hold no price, or where the
    run opens with no article number (a quantity, then a price, a discount and a price are one row's)."""
    if len(run) < 4 or lines[run[0]].money or not ARTICLE.search(lines[run[0]].shown):
        return [run]
    shapes = [_shape(lines[i]) for i in run]
    cuts = [0]
    for p in range(2, len(run) - 1):
        if shapes[p : p + 2] == shapes[:2] and p >= cuts[-1] + 2:
            cuts.append(p)
    pieces = [run[a:b] for a, b in itertools.pairwise([*cuts, len(run)])]
    return pieces if all(any(_row_price(lines[i]) for i in piece) for piece in pieces) else [run]


def _opens(line: Line) -> bool:
    """Whether a description line opens an item: a quantity or the item's code first."""
    return QUANTITY_LEAD.match(line.shown) is not None or LEAD.match(line.shown) is not None


def _wrapped(lines: list[Line], run: list[int]) -> int:
    """How many lines of a description run between two rows wrap the row above: those before the first
    that opens an item; none where no line after the first does."""
    return next((n for n in range(1, len(run)) if _opens(lines[run[n]])), 0)


def _row_price(line: Line) -> bool:
    """Whether a box states a row's price: an amount, not a unit price under it ("@RM18.90")."""
    return line.money and not line.shown.lstrip().startswith("@")


def _pair(lines: list[Line], runs: list[tuple[str, list[int]]], trailing: bool) -> list[list[int]]:
    """Each run of boxes with its description: the run after it where the till prints descriptions
    after the boxes, otherwise the run before it (less the lines that wrap the row above). There a
    number printed after a row's last price and before the next description opens the next row (an
    article number: "31.50 SR", "070100004", "BAWANG PUTIH"; a quantity: "@RM18.90", "2", "DR001C THAI
    ICE TEA"), and boxes with no price after a row (a unit price, a quantity) are no row: what stands
    before their first number ends the row above ("AFOOD (S)", "@RM25.00")."""
    rows: list[list[int]] = []
    carried: list[int] = []  # the lines that open the next row
    for at, (mark, run) in enumerate(runs):
        if mark != "B":
            continue
        before = runs[at - 1] if at > 0 else ("|", [])
        after = runs[at + 1] if at + 1 < len(runs) else ("|", [])
        if trailing:
            rows.append(run + (after[1] if after[0] == "T" else []))
            continue
        head = before[1] if before[0] == "T" else []
        numbers = [n for n, i in enumerate(run) if NUMBER.fullmatch(lines[i].shown)]
        priced = [n for n, i in enumerate(run) if _row_price(lines[i])]
        if not priced and rows:
            back = numbers[0] if numbers and after[0] == "T" else len(run)
            if carried:
                carried += head + run
            else:
                rows[-1] += head + run[:back]
                carried = run[back:]
            continue
        between = not carried and rows and at > 1 and runs[at - 2][0] == "B"
        wraps = _wrapped(lines, head) if between else 0
        rows[-1:] = [rows[-1] + head[:wraps]] if wraps else rows[-1:]
        cut = next((n for n in numbers if priced and n > priced[-1] and after[0] == "T"), len(run))
        rows.append(carried + head[wraps:] + run[:cut])
        carried = run[cut:]
    if not trailing and rows and not carried and runs[-1][0] == "T":  # the last row's wrapped line
        rows[-1] += runs[-1][1]
    return rows


def box_rows(lines: list[Line]) -> list[Row]:
    """The item rows of a receipt printed one box a line, up to its total; none where it is not one."""
    kinds = [kind_of(line) for line in lines]
    first = next(
        (i for i, kind in enumerate(kinds) if kind == "price" and not _valued(lines, kinds, i)), None
    )
    if first is None:
        return []
    stop = next((i for i in range(first + 1, len(lines)) if _ends(lines, kinds, i)), len(lines))
    prices = sum(kind == "price" for kind in kinds[first:stop])
    named = sum(kind == "text" and line.money for kind, line in zip(kinds[:stop], lines, strict=False))
    if prices < 2 or prices < 2 * named:
        return []
    start = first
    while start > 0 and kinds[start - 1] == "box":
        start -= 1
    runs = _runs(lines, kinds, start, stop)
    opens = start > 0 and kinds[start - 1] == "text" and LEAD.match(lines[start - 1].shown) is not None
    trailing = next(mark for mark, _ in reversed(runs) if mark != "|") == "T" and not opens
    if not trailing:  # the first row's description stands above the list's first box
        heads = [run for mark, run in runs if mark == "T"]
        wanted = len(heads[0]) - _wrapped(lines, heads[0]) if heads else 1
        above = start
        while above > 0 and start - above < wanted and kinds[above - 1] == "text":
            above -= 1
            if LEAD.match(lines[above].shown):  # the description's first line
                break
        runs.insert(0, ("T", list(range(above, start))))
    rows = _pair(lines, runs, trailing)
    return [
        (row[0], row[-1])
        for row in rows
        if any(kinds[i] == "text" for i in row) or any(kinds[i] == "price" for i in row)
    ]
