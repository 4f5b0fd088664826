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

from formwork.tasks.grounding.dates import WrittenDates, numeric_readings
from formwork.tasks.grounding.reading import RECORDS_KEPT

STATED = re.compile(
    r"(?im)^[>\s]*(?:date|sent|datum|fecha|gesendet|envoyé|日期|日付|发送时间|送信日時)\s*[:：]\s*"  # headers
    r"|\b(?:today is|today's date is|sent on|written on|dated|hoy es|heute ist|aujourd'hui(?: c'est)?|"
    r"nous sommes le|oggi è|hoje é|vandaag is)\s*,?\s*"
    r"|(?:今天是|今天|今日は)\s*[:：,，]?\s*"
)
EARLIEST = date(1980, 1, 1)  # before this no mail header is believed (e-mail was not in use)
AHEAD = timedelta(days=1)  # a sender's clock and time zone may run a day ahead of ours, no more
NEAR = 24  # the date must start within this many characters after the phrase ("Friday 2024-03-22")


@lru_cache(maxsize=RECORDS_KEPT)
def stated_reference(text: str) -> tuple[date, str] | None:
    """The first absolute date the text states as the day it was written, and the anchor label
    ("text: Sent on 2024-06-10"); None if the text states none (or only a day no text was written
    on: `unlikely_reference`)."""
    phrases = list(STATED.finditer(text))
    if not phrases:
        return None
    dates = numeric_readings(text) + WrittenDates(text, None, None).readings()
    for phrase in phrases:
        after = [
            r for r in dates if 0 <= r.span[0] - phrase.end() <= NEAR and not unlikely_reference(r.value)
        ]
        if after:
            first = min(after, key=lambda r: r.span[0])
            line = text[phrase.start() : first.span[1]].strip()
            return first.value, f"text: {line}"  # type: ignore[return-value]
    return None


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
    grounded grammar both read it."""
    reference = reference_date(meta, field)
    return reference, f"meta {field}" if reference else None
