"""Every date a text writes, with its span: numeric forms by regex, written ones by dateparser.

Numeric forms ("2020-03-03", "3/3/20", "2020年3月3日", "2020년 3월 3일") are read by a regex, in
either day/month order when the text is ambiguous; day, month and year are parted by one separator
written twice alike, and a match that means no day hides none that begins inside it ("Total $85.37.
01/07/2025": "85.37. 01" is an amount and a full stop). Written ones are read by `dateparser`, asked only
about runs of words around a month, weekday or relative word (dateparser alone glues neighbours onto
a date: "last Friday, 30"; "on March 3rd 2020 by"). An expression whose meaning depends on the day it
was written ("yesterday", "last Friday", "March 3") is read only against a reference date, as
`derived`.

Only what the text states is a day (`WrittenDates._states_day`, `_longest`):
- a run must name a day: a day number, a weekday or a relative day ("June", "June 2024", "ago" or
  "next" alone name none); a weekday's abbreviation alone only where the text marks it as one,
  "(Tue)" or "Fri." (unmarked, "mit", "mon" and "Die" are German's "with", French's "my" and an
  article);
- digits before a currency or an amount word ("12 March, 95 EUR") or two digits after a comma are
  an amount, never a year; digits after "#" number an item ("set #51 | 2" is no 2 September 2051:
  "set" is Italian for September), and a table's cells are read apart;
- a reading belongs to the longest run around its date word: a sub-run that means another day is
  dropped ("Mon 3" of "Mon 3 June", "Monday" of "next Monday");
- "next" and "last" before a weekday are read here (dateparser reads "next Monday" as nothing and
  "Monday" alone as the last one): the first such weekday after, or before, the reference.

Speed: dateparser costs ~0.5-1.5 ms a call and a date word has up to 15 runs around it, so the
reader asks it less, never differently (every gold text and five joined 6,000-character texts, with
and without a reference date: the same readings, in 2.2-2.8x less time; BENCHMARKS section 15):
- a run with a word no locale of LANGUAGES knows ("Taxi", "airport": not a token of theirs, not a
  time zone, not a word of their locale data) is never asked: dateparser refuses a string with a
  token no locale knows, so the answer is None anyway (`known`);
- a run that parses to nothing against the first base is not asked about the second;
- a run without a digit is relative by nature (no year in digits): it is read only against the
  reference date, and skipped without one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from functools import cache, lru_cache

from formwork.schemas.annotations import DateOrder
from formwork.tasks.grounding.date_words import (
    LANGUAGES,
    date_words,
    day_words,
    known,
    month_words,
    weekday_abbreviations,
    weekday_numbers,
    weekdays_named,
)
from formwork.tasks.grounding.day_parts import held_spans
from formwork.tasks.grounding.reading import RECORDS_KEPT, Reading, overlaps

YMD = re.compile(r"(?<!\d)(\d{4})\s*[-/.年년]\s*(\d{1,2})\s*[-/.月월]\s*(\d{1,2})(?:\s*[日일])?(?!\d)")
# Day, month and year parted by one separator written twice alike: "01/07/2025", "3. 5. 2024", never the
# "85.37. 01" of "Total $85.37. 01/07/2025" (a decimal amount, a full stop, then the date).
AB_Y = re.compile(r"(?<!\d)(\d{1,2})(\s*[-/.]\s*)(\d{1,2})\2(\d{4}|\d{2})(?!\d)")
MAX_WORDS = 5
# A word that names a day of the month: 3, 03, 3rd, 1er, 3º; or a numeric date "10.06.2024".
DAY_NUMBER = re.compile(r"\d{1,2}(?:st|nd|rd|th|er|re|e|o|a|º|ª)?|\d{1,4}[./-]\d{1,2}(?:[./-]\d{1,4})?", re.I)
# What follows digits that are an amount: a currency sign, code or word ("95 EUR", "80 €", "30 francs").
AMOUNT_AFTER = re.compile(
    r"\s*(?:[€$£¥₹]|(?:[A-Z]{3}|[Ee]uros?|[Dd]ollars?|[Ff]rancs?|[Pp]ounds?|yen|kr|zł|Kč)(?![^\W\d_]))"
)
ORDINAL = re.compile(r"(\d{1,2})(?:st|nd|rd|th)")  # "3rd": a day's number, whatever the run's day
CURRENCY_SIGN = re.compile(r"[€$£¥₹]")
BOUNDARY = re.compile(r"[\n\t|;!?()\[\]]")  # between two words (a table's cells too): two expressions
SHORT = re.compile(r"\d{1,2}|[^\W\d_]{1,4}")  # a day number or an abbreviation, before its own dot
STEP = {"next": 1, "last": -1}  # "next Monday", "last Friday": read here, not by dateparser
# Two bases far apart: an expression that parses to different days against them is relative.
BASES = (datetime(2001, 6, 15, 12), datetime(2011, 2, 10, 12))


@cache
def _word() -> re.Pattern[str]:
    """A word of a run: a time ("Jun 2024 09" is no day), a date word written with an apostrophe
    ("aujourd'hui", with ' or ’: `\\w` stops at either, and "aujourd" and "hui" alone are no day), or
    letters and digits, joined by . / or - ("avant-hier", "03.06.2024")."""
    elided = sorted((w for w in date_words() if "'" in w), key=len, reverse=True)
    names = [re.escape(w).replace("'", "['’]") + r"(?!\w)" for w in elided]
    return re.compile("|".join([r"\d{1,2}:\d{2}(?::\d{2})?", *names, r"\w+(?:[./-]\w+)*"]), re.I)


def _key(word: str) -> str:
    """A word as the date word lists hold it: lower case, no closing dot, ’ written '."""
    return word.lower().rstrip(".").replace("’", "'")


@lru_cache(maxsize=RECORDS_KEPT)
def _parses(text: str) -> dict[tuple[str, datetime, bool], date | None]:
    """dateparser's answers for the runs of one text, shared by its readers: the stated-reference
    search (no reference) and the record's reading (with one) ask the same runs against the same bases."""
    return {}


def safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def numeric_readings(text: str) -> list[Reading]:
    """Dates written with digits; the ISO form itself is `exact`; "a/b/y" in either order, each
    reading marked with its order where the other means another day."""
    found = []
    for m, (day,) in _dated(YMD, text, _ymd):
        found.append(Reading(day, m.span(), "exact" if m.group() == day.isoformat() else "normalised"))
    for m, days in _dated(AB_Y, text, _ab_y):
        found += [Reading(d, m.span(), "normalised", order=_order(m, d)) for d in days]
    return found


def _ymd(m: re.Match[str]) -> list[date]:
    day = safe_date(*(int(g) for g in m.groups()))
    return [day] if day else []


def _ab_y(m: re.Match[str]) -> list[date]:
    """The days "a/b/y" can mean, in either order; a two-digit year in this century or the last."""
    a, b, y = int(m.group(1)), int(m.group(3)), int(m.group(4))
    years = [y] if len(m.group(4)) == 4 else [2000 + y, 1900 + y]
    return sorted({d for year in years for d in (safe_date(year, b, a), safe_date(year, a, b)) if d})


def _order(m: re.Match[str], day: date) -> DateOrder | None:
    """The order "a/b/y" is read in to mean `day`, where the text leaves it open (both a and b could be
    a month, and differ); None where it does not ("25/06/2024" is day first whatever is stated)."""
    a, b = int(m.group(1)), int(m.group(3))
    if a == b or a > 12 or b > 12:
        return None
    return "day-first" if (day.day, day.month) == (a, b) else "month-first"


def _dated(
    pattern: re.Pattern[str], text: str, days: Callable[[re.Match[str]], list[date]]
) -> list[tuple[re.Match[str], list[date]]]:
    """The matches of `pattern` that mean a day, with the days: one that means none ("37.01.07") hides
    no date that begins inside it, so the search goes on from its next character, not from its end."""
    found, at = [], 0
    while m := pattern.search(text, at):
        meant = days(m)
        if meant:
            found.append((m, meant))
        at = m.end() if meant else m.start() + 1
    return found


class WrittenDates:
    """Dates in words, read by dateparser run by run; `reference` (with its `anchor` label) resolves
    the relative ones."""

    def __init__(self, text: str, reference: date | None, anchor: str | None):
        self.text, self.reference, self.anchor = text, reference, anchor
        self.words = [m.span() for m in _word().finditer(text)]
        self.held = held_spans(text)  # "heute Morgen", "last night": read whole, by day_parts
        self._parsed = _parses(text)

    def _runs(self, hit: int) -> list[tuple[int, int]]:
        """Every run of up to MAX_WORDS words that holds word `hit` and only words some locale knows,
        and shares no character with a part of a day (`day_parts.held_spans`: the "Morgen" of "heute
        Morgen" is no tomorrow); without a reference date, only runs with a digit (a day in words
        alone, "Friday", means a day only against a reference)."""
        words, runs = self.words, []
        near = range(max(0, hit - MAX_WORDS + 1), min(hit + MAX_WORDS, len(words)))
        readable = {k: known(_key(self.text[words[k][0] : words[k][1]])) for k in near}
        for i in range(max(0, hit - MAX_WORDS + 1), hit + 1):
            if not all(readable[k] for k in range(i, hit)):
                continue
            for j in range(hit, min(i + MAX_WORDS, len(words))):
                if not readable[j]:
                    break
                span = (words[i][0], words[j][1])
                dated = self.reference is not None or any(c.isdigit() for c in self.text[span[0] : span[1]])
                if dated and not overlaps(span, self.held) and self._states_day(i, j):
                    runs.append(span)
        return runs

    def _states_day(self, first: int, last: int) -> bool:
        """Whether words `first`..`last` can name a day: one of them is a day number, a weekday or a
        relative day; the last is not digits before a currency ("12 March, 95 EUR"), nor two digits
        after a comma; no currency sign inside."""
        words = [self.text[s:e] for s, e in self.words[first : last + 1]]
        if not any(DAY_NUMBER.fullmatch(w) or _key(w) in day_words() for w in words):
            return first == last and self._set_apart(first)
        start, end = self.words[first][0], self.words[last][1]
        if CURRENCY_SIGN.search(self.text, start, end) or any(self._ends(k) for k in range(first, last)):
            return False
        if any(self.text[s - 1 : s] == "#" for s, _ in self.words[first : last + 1]):
            return False  # "#51" numbers a line or an item ("Drill bit set #51": no 2051 in Italian)
        if any(self._comma_before_month(k) for k in range(first, last)):
            return False  # "Room 12, June rate": a number, then the month of another phrase
        if words[-1].isdigit() and last > first:
            between = self.text[self.words[last - 1][1] : self.words[last][0]]
            if AMOUNT_AFTER.match(self.text, end) or ("," in between and len(words[-1]) <= 2):
                return False
        return True

    def _comma_before_month(self, k: int) -> bool:
        """Whether word `k` is a day number that a comma parts from the month after it: a day is
        written "12 June" or "June 12, 2024", never "12, June"."""
        (start, end), (after, after_end) = self.words[k], self.words[k + 1]
        day, month = self.text[start:end], self.text[after:after_end].lower().rstrip(".")
        return day.isdigit() and len(day) <= 2 and "," in self.text[end:after] and month in month_words()

    def _agrees(self, run: tuple[int, int], day: date) -> bool:
        """Whether `day` falls on every weekday the run names and is every ordinal day it writes:
        dateparser reads "Sat 3" as the 3rd month and the reference's day, whatever weekday that is,
        and "Monday the 3rd" as the last Monday, whatever its number."""
        words = [_key(m.group()) for m in _word().finditer(self.text, run[0], run[1])]
        ordinals = [int(o.group(1)) for w in words if (o := ORDINAL.fullmatch(w))]
        weekdays = all(day.weekday() in weekdays_named().get(word, range(7)) for word in words)
        return weekdays and all(n == day.day for n in ordinals)

    def _set_apart(self, k: int) -> bool:
        """Whether word `k` is a weekday's abbreviation that the text marks as one: bracketed
        ("Lyft $48.12 (Tue)") or closed by a dot ("Fri."); alone and unmarked, "mit", "mon", "son"
        and "Die" are words of their languages."""
        start, end = self.words[k]
        if self.text[start:end].lower().rstrip(".") not in weekday_abbreviations():
            return False
        after = self.text[end : end + 1]  # a word never ends in its dot: WORD stops before it
        return after == "." or (self.text[start - 1 : start] == "(" and after == ")")

    def _parse(self, phrase: str, base: datetime, past: bool = False) -> date | None:
        key = (phrase, base, past)
        if key not in self._parsed:
            import dateparser

            settings: dict = {"RELATIVE_BASE": base}
            if past:
                settings["PREFER_DATES_FROM"] = "past"
            when = dateparser.parse(phrase, settings=settings, languages=list(LANGUAGES))
            self._parsed[key] = when.date() if when else None
        return self._parsed[key]

    def _meaning(self, phrase: str) -> tuple[date, bool] | None:
        """(the day, is it absolute?) for a phrase, or None; relative days only against the reference."""
        if any(c.isdigit() for c in phrase):
            first = self._parse(phrase, BASES[0])
            if first is None:
                return None
            if first == self._parse(phrase, BASES[1]):
                return first, True
        if self.reference is None:
            return None
        base = datetime(self.reference.year, self.reference.month, self.reference.day, 12)
        day = self._parse(phrase, base, past=True)
        return (day, False) if day else None

    def readings(self) -> list[Reading]:
        """Per date word, each day some run around it means: absolutely, or (when no run means that
        day absolutely) against the reference date; each at its shortest run."""
        found = []
        for hit, (start, end) in enumerate(self.words):
            if _key(self.text[start:end]) not in date_words():
                continue
            meant = [
                (run, m)
                for run in self._runs(hit)
                if (m := self._meaning(self.text[run[0] : run[1]])) and self._agrees(run, m[0])
            ]
            stepped = self._stepped(hit)
            meant = _longest([(run, m) for run, m in meant if run not in dict(stepped)] + stepped)
            absolute = [(run, day) for run, (day, fixed) in meant if fixed]
            relative = [(run, day) for run, (day, fixed) in meant if not fixed]
            fixed_days = sorted({day for _, day in absolute})
            found += [Reading(d, _shortest(absolute, d), "normalised") for d in fixed_days]
            found += [
                Reading(d, _shortest(relative, d), "derived", self.anchor)
                for d in sorted({day for _, day in relative} - set(fixed_days))
            ]
        return found

    def _ends(self, k: int) -> bool:
        """Whether an expression ends between words `k` and `k + 1`: a line break, a bracket, ; ! ?,
        or a full stop before a capital that does not close a day number or an abbreviation
        ("2024-03-22. Last Monday" is two expressions; "3. Mai 2024" and "Mon. 3 June" are one)."""
        gap = self.text[self.words[k][1] : self.words[k + 1][0]]
        if BOUNDARY.search(gap):
            return True
        word = self.text[self.words[k][0] : self.words[k][1]]
        after = self.text[self.words[k + 1][0]]
        return gap.startswith(".") and gap[1:2].isspace() and after.isupper() and not SHORT.fullmatch(word)

    def _stepped(self, hit: int) -> list[tuple[tuple[int, int], tuple[date, bool]]]:
        """ "next Monday" / "last Monday" around word `hit`: the first Monday after (or before) the
        reference date, never the reference day itself; nothing without a reference."""
        if self.reference is None:
            return []
        found = []
        for first in (hit - 1, hit):
            if first < 0 or first + 1 >= len(self.words):
                continue
            (start, _), (_, end) = self.words[first], self.words[first + 1]
            pair = self.text[start:end].lower().split()
            weekday = weekday_numbers().get(pair[-1].rstrip(".")) if len(pair) == 2 else None
            if weekday is None or pair[0] not in STEP:
                continue
            step = pair[0]
            if STEP[step] > 0:
                day = self.reference + timedelta(days=(weekday - self.reference.weekday()) % 7 or 7)
            else:
                day = self.reference - timedelta(days=(self.reference.weekday() - weekday) % 7 or 7)
            found.append(((start, end), (day, False)))
        return found


def _longest(
    meant: list[tuple[tuple[int, int], tuple[date, bool]]],
) -> list[tuple[tuple[int, int], tuple[date, bool]]]:
    """The readings no longer run contradicts: a run inside a longer one that means another day is a
    part of that expression ("Monday" of "next Monday", "Mon 3" of "Mon 3 June"), not a day of its own."""
    return [
        (run, (day, fixed))
        for run, (day, fixed) in meant
        if not any(
            other[0] <= run[0] and run[1] <= other[1] and other != run and other_day != day
            for other, (other_day, _) in meant
        )
    ]


def _shortest(runs: list[tuple[tuple[int, int], date]], day: date) -> tuple[int, int]:
    return min((run for run, meant in runs if meant == day), key=lambda run: run[1] - run[0])
