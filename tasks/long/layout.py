"""What a text's own layout says, line by line: tables, mail messages, and the lines of a list.

Read without a model, from shapes people and programs write lists in: a table is three or more lines
with the same number of `|` (or tab) separators; a mail message starts at a `From:` header, an
"On ... wrote:" line or a forwarded-message marker (quoted with `>` too); a line of a list carries an
amount (a currency sign or code beside a number, or a number with two decimals, OCR's `l`, `O` and `S`
for 1, 0 and 5 allowed beside a sign), may start with a date, may be a quantity line ("2 @ £2.75",
"0.915 kg @ £0.73/kg", "２コ×単１１９") that belongs to the line above it, or a summary (a total, a
balance, tax, change, tender, rounding, points, a count: 合計, 小計, お釣り, Kontostand, CASH, ROUNDING ADJ
...; tasks/long/non_items.py) that states a header field or the till's tail, never an item, but for a
dated tax line in a dated list (a folio's "City tax"), which is a charge. A date of two numbers is one
a calendar has, on a line that is more than an amount: an OCR'd till's boxes ("15.25", "6.21") are
amounts. Full-width digits and spaces are read as their ASCII forms (NFKC).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property

from formwork.tasks.long.non_items import ADJUSTMENTS, TAXES, TENDER, TOTALS, states

MESSAGE = re.compile(
    r"^(?:From: |-{2,} ?(?:Original Message|Forwarded message)|On .{3,200} wrote:\s*$"
    r"|Le .{3,200} a écrit ?:|Am .{3,200} schrieb)",
    re.MULTILINE | re.IGNORECASE,
)
QUOTED_MESSAGE = re.compile(
    r"^(?:> ?)+(?:From: |-{2,} ?(?:Original Message|Forwarded message))", re.MULTILINE
)
TABLE_SEPARATORS = ("|", "\t")

CURRENCY = r"(?:[£$€¥₩₹]|\b(?:EUR|USD|GBP|CHF|JPY|CNY|RMB|CAD|AUD|SEK|NOK|DKK|PLN|INR)\b)"
MONEY = re.compile(
    rf"{CURRENCY} ?-? ?[\dOlS][\dOlS.,']*"  # £1.15, EUR 12, ¥680, and OCR's £l.85 or £2.8S
    r"|(?<![\d.,])\d{1,3}(?:[,.' ]\d{3})*[.,]\d\d(?![.,]?\d)"  # 1,234.56, 12,50 (not 03.05.2024)
    r"|\d+(?:[.,]\d+)? ?(?:元|円|€|EUR|USD|GBP|CHF|kr)"  # 125.96元, 45,90 €
)
BARE = re.compile(rf"[-+]? ?(?:{MONEY.pattern})")
MONTH = (
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mär|mai|okt|dez|janv|févr|avr|juin|juil|août"
    r"|déc|ene|abr|ago|dic)[a-zéû]*\.?"
)
DATED = re.compile(
    r"^\s*(?:\d{4}[-/.年] ?\d{1,2}[-/.月] ?\d{1,2}"
    r"|(?P<a>\d{1,2})[-/.](?P<b>\d{1,2})(?:[-/.]\d{2,4}|\.)?(?![\d.,])"
    rf"|\d{{1,2}}\.? ?{MONTH}|{MONTH} \d{{1,2}}\b|\d{{1,2}}月 ?\d{{1,2}}日)",
    re.IGNORECASE,
)
QUANTITY = re.compile(
    r"^\s*\d+(?:[.,]\d+)? ?(?:x\b|×|@|kg\b|g\b|lb\b|pcs?\b|st\b|コ|個|点|本|枚|パック)", re.I
)


@dataclass(frozen=True)
class Line:
    """One line of a text: where it stands (`end` before its newline) and what its layout says."""

    start: int
    end: int
    raw: str

    @cached_property
    def shown(self) -> str:
        """The line as its shapes are read: full-width digits and spaces in their ASCII forms."""
        return unicodedata.normalize("NFKC", self.raw).replace("\f", " ")

    @property
    def blank(self) -> bool:
        return not self.shown.strip()

    @property
    def indent(self) -> int:
        return len(self.shown) - len(self.shown.lstrip())

    @property
    def money(self) -> bool:
        return MONEY.search(self.shown) is not None

    @property
    def dated(self) -> bool:
        """Whether the line opens with a date. Two numbers ("02.05.", "05/02") are a date only where one
        can be a month and both a day, and on a line that is more than an amount: an OCR'd till prints
        each amount as a box of its own ("15.25", "6.21"), and a statement's line has its text."""
        found = DATED.match(self.shown)
        if found is not None and found["a"] is not None and self.bare:
            return False
        if found is None or found["a"] is None:
            return found is not None
        low, high = sorted((int(found["a"]), int(found["b"])))
        return 1 <= low <= 12 and high <= 31

    @property
    def summary(self) -> bool:
        """A total, a balance, change, tax, tender, rounding, points, a count or a thank-you: a header
        field's line or the till's tail, never an item's (tasks/long/non_items.py)."""
        return self.totals or states(TAXES, self.shown) or states(TENDER, self.shown)

    @property
    def totals(self) -> bool:
        """A total, a balance carried or brought forward, change: a summary even where it is dated (a
        dated tax line on a statement or a folio, "09.04.24 City tax 2 7.00", is a charge)."""
        return states(TOTALS, self.shown)

    @property
    def adjustment(self) -> bool:
        """A discount or promotion under an item: no item of its own (tasks/long/non_items.py)."""
        return states(ADJUSTMENTS, self.shown)

    @property
    def bare(self) -> bool:
        """Only an amount: an OCR'd till's box under its label ("ITEM DISCOUNT", then "0.00")."""
        return BARE.fullmatch(self.shown.strip()) is not None

    @property
    def quantity(self) -> bool:
        return QUANTITY.match(self.shown) is not None

    @property
    def digits(self) -> bool:
        return any(c.isdigit() for c in self.shown)


def lines_of(text: str) -> list[Line]:
    """Every line of `text`, blank ones included, in order."""
    found, at = [], 0
    for raw in text.split("\n"):
        found.append(Line(at, at + len(raw), raw))
        at += len(raw) + 1
    return found


def table_headers(text: str) -> list[tuple[int, int, int]]:
    """Each table in `text` as (header start, header end, table end): three or more consecutive lines
    with the same number of `|` (or tab) separators; the header is its first line, with a `---` rule
    line under it when there is one."""
    tables = []
    run: list[Line] = []

    def close() -> None:
        if len(run) >= 3:
            header_end = run[1].end + 1 if set(run[1].raw) <= set("|-:+ \t") else run[0].end + 1
            tables.append((run[0].start, min(header_end, len(text)), min(run[-1].end + 1, len(text))))

    def shape(line: Line) -> tuple[int, int]:
        return tuple(line.raw.count(sep) for sep in TABLE_SEPARATORS)  # type: ignore[return-value]

    for line in lines_of(text):
        if run and shape(line) == shape(run[-1]) and any(shape(line)):
            run.append(line)
            continue
        close()
        run = [line] if any(shape(line)) else []
    close()
    return tables


# A statement marks money in (a refund, a salary, a payment to the card) as the bank writes it: `H`
# (Haben) beside `S` (Soll), `CR` beside `DR`, a `+`, in a column of its own ("Charges  Credits"), or in
# a section of its own ("PAYMENTS AND CREDITS").
CREDIT_MARKS = ("H", "CR", "Cr", "cr", "+")
CREDIT_WORD = re.compile(
    r"(?i)\b(?:credits?|haben|gutschrift(?:en)?|crédits?|avoirs?|abonos?|haber|payments?|zahlungseingänge?)\b"
)
DEBIT_WORD = re.compile(
    r"(?i)\b(?:debits?|charges?|soll|belastungen?|débits?|withdrawals?|paid out|cargos?|debe)\b"
)


def column_row(line: Line) -> bool:
    """Whether `line` heads money columns, one for money in and one for money out ("Charges  Credits",
    "Soll  Haben", "| Debit | Credit |"): digit-free, naming both."""
    return not line.digits and bool(CREDIT_WORD.search(line.shown)) and bool(DEBIT_WORD.search(line.shown))


def credited(line: Line, columns: Line | None, heading: str = "") -> bool:
    """Whether `line`'s amount is money in: marked so beside it, standing under the credit column of
    `columns` (right-aligned under it, or in the cell under it where the row is `|`- or tab-separated),
    or listed under a `heading` that names money in."""
    amounts = list(MONEY.finditer(line.shown))
    if not amounts:
        return False
    last = amounts[-1]
    if line.shown[last.end() :].strip() in CREDIT_MARKS or line.shown[: last.start()].rstrip().endswith("+"):
        return True
    if heading and not DEBIT_WORD.search(heading) and CREDIT_WORD.search(heading):
        return True
    if columns is None:
        return False
    for separator in TABLE_SEPARATORS:
        if separator in columns.raw and separator in line.raw:
            heads, cells = columns.shown.split(separator), line.shown.split(separator)
            return any(
                CREDIT_WORD.search(head) and MONEY.search(cell)
                for head, cell in zip(heads, cells, strict=False)
            )
    words = list(re.finditer(r"\S+", columns.shown))
    under = min(words, key=lambda word: abs(word.end() - last.end()))  # amounts align right
    return CREDIT_WORD.search(under.group()) is not None
