"""A record's reference date: its meta's (`reference_date`), or one the text states as its own.

"Sent on 2024-06-10: coffee yesterday" is anchored by its own first words, as is a forwarded mail's
quoted `Date:` header, "Today is Friday 2024-03-22", "Hoy es 2024-05-10", "Heute ist der 3. Mai
2024" or 今天是2024年6月3日. Only an absolute date (one that means the same day whatever day it is
read on) right after such a phrase counts, and the evidence marks the anchor as the text's: a reader
can see that "yesterday" was read against a line of the text, not against the record's metadata.

A reference date must also be one a message can have been written on (`unlikely_reference`): a mail
`Date:` header in 2038 or in 1970 (a clock reset, a forged or broken header) would have "yesterday"
read against a day that never was, so such a day is no reference and the record's meta says why.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any

from formwork.schemas.annotations import DateOrder
from formwork.tasks.grounding.dates import WrittenDates, numeric_readings
from formwork.tasks.grounding.reading import RECORDS_KEPT, Reading, in_order

STATED = re.compile(
    r"(?im)^[>\s]*(?:date|sent|datum|fecha|gesendet|envoyé|日期|日付|发送时间|送信日時)\s*[:：]\s*"  # headers
    r"|\b(?:today is|today's date is|sent on|written on|dated|hoy es|heute ist|aujourd'hui(?: c'est)?|"
    r"nous sommes le|oggi è|hoje é|vandaag is)\s*,?\s*"
    r"|(?:今天是|今天|今日は)\s*[:：,，]?\s*"
)
EARLIEST = date(1980, 1, 1)  # before this no mail header is believed (e-mail was not in use)
AHEAD = timedelta(days=1)  # a sender's clock and time zone may run a day ahead of ours, no more
NEAR = 24  # the date must start within this many characters after the phrase ("Friday 2024-03-22")
ANCHOR = "reference_anchor"  # the meta key that says where a reference date set by the run came from


@lru_cache(maxsize=RECORDS_KEPT)
def stated_reference(text: str, order: DateOrder | None = None) -> tuple[date, str] | None:
    """The first absolute date the text states as the day it was written, and the anchor label
    ("text: Sent on 2024-06-10"); None if the text states none (or only a day no text was written
    on: `unlikely_reference`). A date its digits leave open is read in the schema's `order`."""
    phrases = list(STATED.finditer(text))
    if not phrases:
        return None
    dates = _written_outright(text, order)
    for phrase in phrases:
        after = [
            r for r in dates if 0 <= r.span[0] - phrase.end() <= NEAR and not unlikely_reference(r.value)
        ]
        if after:
            first = min(after, key=lambda r: r.span[0])
            line = text[phrase.start() : first.span[1]].strip()
            return first.value, f"text: {line}"  # type: ignore[return-value]
    return None


def _written_outright(text: str, order: DateOrder | None) -> list[Reading]:
    """The dates `text` writes with no reference date to read them against, an open one in `order`."""
    return in_order(numeric_readings(text), order) + WrittenDates(text, None, None).readings()


def unlikely_reference(day: date, today: date | None = None) -> str | None:
    """Why `day` cannot be the day a record was written (more than a day after `today`, or before
    1980), or None when it can be."""
    today = today or datetime.now(UTC).date()
    if day > today + AHEAD:
        return f"{day.isoformat()} is in the future (today is {today.isoformat()})"
    if day < EARLIEST:
        return f"{day.isoformat()} is before {EARLIEST.year}, when no mail was sent"
    return None


def reference_date(meta: dict[str, Any] | None, field: str = "reference_date") -> date | None:
    """The record's reference date, against which "yesterday" is derived: the meta `field` (ISO; a
    mail's Date header lands in `reference_date`, so that is read when `field` is absent); None if
    absent, bad, or a day no record was written on (in the future beyond a day, or before 1980:
    `anchors.unlikely_reference`)."""
    meta = meta or {}
    raw = meta.get(field, meta.get("reference_date"))
    try:
        day = date.fromisoformat(str(raw)[:10]) if raw else None
    except ValueError:
        return None
    return day if day is not None and unlikely_reference(day) is None else None


def anchored_reference(meta: dict[str, Any] | None, field: str) -> tuple[date | None, str | None]:
    """The record's reference date and where it came from (its evidence anchor), as the judge and the
    grounded grammar both read it: `meta[ANCHOR]` where the run set the date from the text itself (a
    list's header, tasks/long/itemwise.py), else the meta field."""
    reference = reference_date(meta, field)
    return reference, ((meta or {}).get(ANCHOR) or f"meta {field}") if reference else None


def _one_day_each(text: str, readings: list[Reading]) -> list[Reading]:
    """One day per written date: where "09.04.2024" reads as 9 April or 4 September, the day first
    for a dotted one (as Europe writes it), none for another (04/09/2024 may be either)."""
    kept = []
    for span in dict.fromkeys(r.span for r in readings):
        days = [r for r in readings if r.span == span and isinstance(r.value, date)]
        first = re.match(r"\s*(\d+)", text[span[0] : span[1]])
        if len({r.value for r in days}) > 1 and first and "." in text[span[0] : span[1]]:
            days = [r for r in days if r.value.day == int(first.group(1))]  # type: ignore[union-attr]
        if len({r.value for r in days}) == 1:
            kept.append(days[0])
    return kept


def latest_stated_day(text: str, order: DateOrder | None = None) -> tuple[date, str] | None:
    """The latest absolute day `text` states, with the anchor label of its line ("text: neuer
    Kontostand vom 31.05.2024"), or None: a statement's or a folio's closing day, against which the
    year-less days of its lines are read (tasks/grounding/yearless.py); an open date in `order`."""
    days = [r for r in _written_outright(text, order) if r.kind != "derived"]
    days = [r for r in _one_day_each(text, days) if unlikely_reference(r.value) is None]  # type: ignore[arg-type]
    if not days:
        return None
    last = max(days, key=lambda r: (r.value, -r.span[0]))
    line_start = text.rfind("\n", 0, last.span[0]) + 1
    line_end = text.find("\n", last.span[1])
    line = " ".join(text[line_start : line_end if line_end >= 0 else len(text)].split())
    return last.value, f"text: {line}"  # type: ignore[return-value]
