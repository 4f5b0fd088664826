"""Days written with digits but no year at a line's start ("02.05.", "05/02"), against a reference date.

A statement's lines start with `02.05.` or `05/02` and leave the year to the header (`Kontoauszug
5/2024`, `Statement date 31/05/2024`); read alone, such a line names no day, and the Sparkasse
statement's 17 expenses all came back with a null date (BENCHMARKS section 34). Against a reference
date each means the nearest such day not after it, as a year-less 9月28日 does
(tasks/grounding/cjk_dates.py): a statement closed on 31 May 2024 dates its `02.05.` 2 May 2024, a
January one its `28.12.` the December before. Every reading is `derived`: without the reference none
of them names a day.

A day more than two months before the reference is none (RECENT_DAYS): a statement covers a month
or two, and its `02/05` read month first (5 February, four months before a May statement closes) or
its `07/05` read as 5 July of the year before are days no line of it means. That settles most slashes:
a French statement closing on 31 May reads every `dd/mm` day first, a US one due on 26 June every
`mm/dd` month first (the 1.5B chose the wrong order for 5 of 10 and 2 of 8 lines when both were
offered: BENCHMARKS section 38). Where both orders fall within two months, both are offered.

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

from formwork.tasks.grounding.ordinal_days import nearest_not_after
from formwork.tasks.grounding.reading import Reading

# at a line's start, then a space or the line's end, and no currency after it ("3.10 EUR" is a price)
YEARLESS = re.compile(
    r"(?m)^[ \t]*(\d{1,2})([./])(\d{1,2})(?:\.)?(?=[ \t]|$)(?![ \t]*(?:[€$£¥]|[A-Z]{3}\b|元|円))"
)
CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
RECENT_DAYS = 62  # a statement covers a month or two: a year-less day further back is no day of it


def recent_day(reference: date, month: int, day: int) -> date | None:
    """The nearest day `month`/`day` not after the reference, unless more than RECENT_DAYS before it."""
    found = nearest_not_after(reference, month, day)
    return found if found is not None and (reference - found).days <= RECENT_DAYS else None


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
        days = sorted({d for month, day in orders if (d := recent_day(reference, month, day))})
        readings += [Reading(d, (m.start(1), m.end()), "derived", anchor) for d in days]
    return readings
