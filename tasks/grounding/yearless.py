"""Days written with digits but no year at a line's start ("02.05.", "05/02"), against a reference date.

A statement's lines start with `02.05.` or `05/02` and leave the year to the header (`Kontoauszug
5/2024`, `Statement date 31/05/2024`); read alone, such a line names no day, and the Sparkasse
statement's 17 expenses all came back with a null date (BENCHMARKS section 34). Against a reference
date each means the nearest such day not after it, as a year-less 9月28日 does
(tasks/grounding/cjk_dates.py): a statement closed on 31 May 2024 dates its `02.05.` 2 May 2024, a
January one its `28.12.` the December before. Every reading is `derived`: without the reference none
of them names a day.

Only a line's first word is read so, which is where statements and folios write their days: in a
sentence `3.10` is a price and `24/7` no day, and a currency after it makes it a price too (`3.10
EUR`). A dot is read day first, as German, French and most of Europe write it; a slash in either order
(`05/02` is 2 May in London, 5 February in New York); never beside a third number (`05/02/24` is a
whole date, read in tasks/grounding/dates.py). A text in Han or kana has its month/day slashes read in
cjk_dates.py instead.
"""

from __future__ import annotations

import re
from datetime import date

from formwork.tasks.grounding.reading import Reading

# at a line's start, then a space or the line's end, and no currency after it ("3.10 EUR" is a price)
YEARLESS = re.compile(
    r"(?m)^[ \t]*(\d{1,2})([./])(\d{1,2})(?:\.)?(?=[ \t]|$)(?![ \t]*(?:[€$£¥]|[A-Z]{3}\b|元|円))"
)
CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def nearest_not_after(reference: date, month: int, day: int) -> date | None:
    """The day `month`/`day` of the reference's year, or of the year before when that is after it."""
    for year in (reference.year, reference.year - 1):
        try:
            found = date(year, month, day)
        except ValueError:
            continue
        if found <= reference:
            return found
    return None


def yearless_readings(text: str, reference: date | None, anchor: str | None) -> list[Reading]:
    """Every year-less day that starts a line of `text`, against `reference` (none without one)."""
    if reference is None:
        return []
    readings = []
    for m in YEARLESS.finditer(text):
        a, slash, b = int(m.group(1)), m.group(2) == "/", int(m.group(3))
        if slash and CJK.search(text):
            continue
        orders = [(b, a), (a, b)] if slash else [(b, a)]  # (month, day): day first, then month first
        days = sorted({d for month, day in orders if (d := nearest_not_after(reference, month, day))})
        readings += [Reading(d, (m.start(1), m.end()), "derived", anchor) for d in days]
    return readings
