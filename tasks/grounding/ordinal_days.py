"""A day of the month written alone as an ordinal ("the 3rd", "on the 21st", "am 3.", "le 3", "el día
3"): the latest such day on or before the reference date, as 8号 is (`cjk_dates`).

dateparser reads a day number only beside a month ("3rd of March", "3. Mai"), and a bare number is a
quantity, so only the forms that name a day are read, and only where what follows cannot make the
ordinal count something else:
- English: "the 3rd" or "on 3rd", then the end of the text or a clause ("?", ",", a dash, a line
  break) or a word that opens no noun phrase ("at", "for", "with"...): "the 3rd floor", "the 3rd
  item", "3rd party", "the 3rd of March" (dateparser's) are no day here;
- German: "am 3." (also vom, zum, seit dem, bis zum), then the end of a clause or a small word ("um",
  "in", "für"...), never a capital ("am 3. Mai" is dateparser's, "am 3. Tag" no day) nor digits;
- French: "le 3" or "le 1er", then the end of a clause or "à", "au", "matin", "soir", "midi" ("le 3
  mars" is dateparser's; "le 3 €" no day);
- Spanish and Portuguese: "el día 3", "no dia 3", unless "de" (a month) or digits follow.
A day number after a month's name ("March the 3rd") or a weekday it does not fall on ("Monday the 3rd"
when the 3rd was a Thursday) is no day of its own. Every reading is `derived`; the digits of a form
read here are no amount.
"""

from __future__ import annotations

import re
from datetime import date

from formwork.tasks.grounding.date_words import month_words, weekdays_named
from formwork.tasks.grounding.reading import Reading

CLAUSE_END = r"\s*(?:$|\n|[,;:!?)\]–—]|-\s|\.(?!\d))"
ORDINALS = (
    re.compile(
        r"(?<!\w)(?:the|on)\s+(?P<day>\d{1,2})(?:st|nd|rd|th)(?!\w)"
        rf"(?={CLAUSE_END}|\s+(?:at|for|with|to|in|from|when|so|but|because|i|we|please|pls|thanks)(?!\w))",
        re.I,
    ),
    re.compile(
        r"(?<!\w)(?:am|vom|zum|seit\s+dem|bis\s+zum)\s+(?P<day>\d{1,2})\.(?!\d)"
        r"(?=\s*(?:$|\n|[,;:!?)\]–—]|-\s)|\s+(?:um|in|bei|für|mit|nach|von|zur|zum)(?!\w))",
        re.I,
    ),
    re.compile(
        rf"(?<!\w)le\s+(?P<day>\d{{1,2}}|1er)(?!\w)(?={CLAUSE_END}|\s+(?:à|au|matin|soir|midi)(?!\w))",
        re.I,
    ),
    re.compile(
        r"(?<!\w)(?:el|del|no|o|do)\s+d[ií]a\s+(?P<day>\d{1,2})(?!\w)(?!\s*(?:de|del|\d|[/.-]\d))", re.I
    ),
)
WORD_BEFORE = re.compile(r"(\w+)\W*$")


def latest_day(reference: date, day: int) -> date | None:
    """The latest day numbered `day` on or before `reference`: this month's, else the month before
    (the 31st on 2 March is 31 January)."""
    for back in range(3):
        index = reference.year * 12 + reference.month - 1 - back
        try:
            found = date(index // 12, index % 12 + 1, day)
        except ValueError:
            continue
        if found <= reference:
            return found
    return None


def nearest_not_after(reference: date, month: int, day: int) -> date | None:
    """The day `month`/`day` of the reference's year, or of the year before where that one is after
    the reference (a year-less 9月28日, or a statement's `28.12.` read in January); None for no day."""
    try:
        this_year = date(reference.year, month, day)
    except ValueError:
        return None
    if this_year <= reference:
        return this_year
    try:
        return date(reference.year - 1, month, day)
    except ValueError:
        return None


def _ordinals(text: str) -> list[re.Match[str]]:
    """The ordinal days `text` writes alone: not after a month's name ("March the 3rd")."""
    found = []
    for pattern in ORDINALS:
        for m in pattern.finditer(text):
            before = WORD_BEFORE.search(text, max(0, m.start() - 20), m.start())
            if not (before and before.group(1).lower() in month_words()):
                found.append(m)
    return found


def ordinal_day_spans(text: str) -> list[tuple[int, int]]:
    """Where an ordinal day is written alone: its digits are a day, never an amount."""
    return [m.span() for m in _ordinals(text)]


def ordinal_readings(text: str, reference: date | None, anchor: str | None) -> list[Reading]:
    """The day each ordinal written alone names against `reference` (none without one), unless a
    weekday just before it names another ("Monday the 3rd")."""
    if reference is None:
        return []
    found = []
    for m in _ordinals(text):
        day = latest_day(reference, 1 if m.group("day").lower() == "1er" else int(m.group("day")))
        before = WORD_BEFORE.search(text, max(0, m.start() - 20), m.start())
        weekdays = weekdays_named().get(before.group(1).lower(), range(7)) if before else range(7)
        if day and day.weekday() in weekdays:
            found.append(Reading(day, m.span(), "derived", anchor))
    return found
