"""Every number a text writes, with its span: digit runs in any grouping convention.

A digit run may group thousands or mark decimals with `,` or `.`; a separator groups thousands only
where every group after it has exactly three digits (so "12.5" is 12.5 and never 125), and "1,234"
keeps both readings. A space (plain, thin U+2009, no-break U+00A0, narrow U+202F) or an apostrophe
before a group of exactly three digits groups thousands as French, Polish, Czech, Russian, Swedish and
Swiss texts write them ("1 250,00 EUR" is 1250); a plain or thin space may also just separate two
numbers ("2 150": two nights, 150), so such a run keeps the split reading of each piece beside the
grouped one. Digits that belong to a date, a time of day or an identifier (an IBAN, a phone
number, a joined code such as "2024-0042") are no amount, and a run with a leading zero ("0170") is
a code: none of them is read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

from formwork.tasks.grounding.reading import Reading, inside, overlaps

# A digit run with optional grouping/decimal separators: 1,234.50 | 1.234,50 | 1'234 | 1234,5 | 1 234;
# a plain or thin space joins only a group of exactly three digits ("2 nuits", "2024 30" stay apart),
# and so does a full-width comma (¥５，２４３), which is a CJK text's comma anywhere else ("1，2人").
NUMBER = re.compile(r"(?<![\d.,])\d+(?:[.,．'\u00a0\u202f]\d+|[ \u2009，]\d{3}(?!\d))*")
SEPARATOR = re.compile(r"([.,，．'\u00a0\u202f\u2009 ])")
FULL_WIDTH = str.maketrans("，．", ",.")  # a Japanese till prints ¥５，２４３ in full width
LOOSE = re.compile(r"[ \u2009]")  # a separator that may also stand between two numbers
TIME = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?![\d:])")  # 12:30, 08:15:00
# Identifier shapes whose digit groups are no amount: an IBAN, a phone number (a leading + or 0, or an
# area code in brackets, and seven digits or more, one space at most between groups: a statement's
# "S/MKTS 0611" and, columns later, "27.18" are no phone), a code of parts joined by - / _ #
# ("2024-0042").
# A phone never starts inside a grouped amount: the "000 000" of "1 000 000.00" is its thousands.
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,}(?: ?[A-Z0-9]{1,4})?\b")
PHONE = re.compile(
    r"(?<![\w.,])(?<!\d[ \u2009\u00a0\u202f'])(?:\+|\(?0|\(\d{2,5}\) ?)\d(?:[\d()./-]| (?! )){5,}\d(?![\w])"
)
CODE = re.compile(r"(?<![\w.,])[A-Za-z0-9]+(?:[-/_#][A-Za-z0-9]+)+(?![\w])")
PLAIN = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # ASCII only: full-width "１２" is normalised


def identifiers(text: str, dates: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """Spans of IBANs, phone numbers and joined codes: "call 0170 5551234" backs no 170, "Invoice
    2024-0042" no 42. A code counts when two of its parts hold digits, or one holds three or more
    beside a part of letters ("INV-0042"); "3-day" or "Zurich-Geneva" stay text. The `dates` are read
    first and blanked: a phone never runs from a date's leading zero over the amount after it
    ("03.06.2024 30 CHF" holds no phone, and 30 stays an amount)."""
    for start, end in dates:
        text = text[:start] + " " * (end - start) + text[end:]
    spans = [m.span() for m in IBAN.finditer(text)]
    spans += [m.span() for m in PHONE.finditer(text) if sum(c.isdigit() for c in m.group()) >= 7]
    for m in CODE.finditer(text):
        parts = re.split(r"[-/_#]", m.group())
        numeric = [p for p in parts if any(c.isdigit() for c in p)]
        if len(numeric) >= 2 or (any(p.isalpha() for p in parts) and max(map(len, numeric), default=0) >= 3):
            spans.append(m.span())
    return spans


def _grouped(digits: list[str]) -> bool:
    """True when digit groups read as thousands: 1 to 3 digits first, exactly three in every group after;
    or the Indian way (lakh, crore: "1,25,000", "1,00,00,000"): 1 or 2 digits first, two in every group
    after but the last, which has three."""
    western = 1 <= len(digits[0]) <= 3 and all(len(group) == 3 for group in digits[1:])
    indian = len(digits) >= 3 and 1 <= len(digits[0]) <= 2 and len(digits[-1]) == 3
    return western or (indian and all(len(group) == 2 for group in digits[1:-1]))


def token_values(token: str) -> set[Decimal]:
    """Every number a written digit run can mean: "1,234" -> {1234, 1.234}, "12.5" -> {12.5} only.

    A separator groups thousands only where every group after it has exactly three digits and all
    grouping separators are the same character; the last `.` or `,`, written once, may be the decimal
    point. A run that starts with a zero ("0170", "007") is a code, not an amount: no reading."""
    parts = SEPARATOR.split(token.translate(FULL_WIDTH))
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


def _pieces(match: re.Match[str]) -> list[tuple[int, int]]:
    """The spans of a run's parts between plain or thin spaces: "2 150" may be two numbers."""
    spans, start = [], match.start()
    for loose in LOOSE.finditer(match.group()):
        spans.append((start, match.start() + loose.start()))
        start = match.start() + loose.end()
    return [*spans, (start, match.end())]


def digit_readings(text: str, taken: list[tuple[int, int]]) -> list[Reading]:
    """The readings of every digit run outside `taken` (dates) and outside times and identifiers; a
    run written as a plain decimal ("42.80") is `exact`, any other form `normalised`. A run grouped by
    spaces also gives each piece's own reading (the split one), and the grouped one only where no
    piece is a date's or an identifier's."""
    taken = taken + [m.span() for m in TIME.finditer(text)] + identifiers(text, taken)
    found = []
    for m in NUMBER.finditer(text):
        pieces = _pieces(m) if LOOSE.search(m.group()) else []
        if not inside(m.span(), taken) and not any(overlaps(piece, taken) for piece in pieces):
            kind = "exact" if PLAIN.fullmatch(m.group()) else "normalised"
            found += [Reading(value, m.span(), kind) for value in sorted(token_values(m.group()))]
        for start, end in pieces if len(pieces) > 1 else []:
            if not inside((start, end), taken):
                written = text[start:end]
                kind = "exact" if PLAIN.fullmatch(written) else "normalised"
                found += [Reading(value, (start, end), kind) for value in sorted(token_values(written))]
    return found
