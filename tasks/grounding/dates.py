"""Every date a text writes, with its span: numeric forms by regex, written ones by dateparser.

Numeric forms ("2020-03-03", "3/3/20", "2020年3月3日") are read by a regex, in either day/month order
when the text is ambiguous. Written ones are read by `dateparser`, asked only about runs of words
around a month, weekday or relative word (dateparser alone glues neighbours onto a date: "last
Friday, 30"; "on March 3rd 2020 by"). An expression whose meaning depends on the day it was written
("yesterday", "last Friday", "March 3") is read only against a reference date, as `derived`.

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
from datetime import date, datetime
from functools import cache, lru_cache

from formwork.tasks.grounding.reading import Reading

YMD = re.compile(r"(?<!\d)(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})(?:\s*日)?(?!\d)")
AB_Y = re.compile(r"(?<!\d)(\d{1,2})\s*[-/.]\s*(\d{1,2})\s*[-/.]\s*(\d{4}|\d{2})(?!\d)")
# dateparser is asked only about stretches that hold a word it could read as a date: a month, a weekday
# or a relative day in one of these languages; dateparser reads the few words around it.
LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl")  # numeric and CJK forms need no language
ENGLISH_RELATIVE = ("ago", "last", "next")  # "3 days ago", "last Friday"
RELATIVE_DAYS = ("1 day ago", "0 day ago", "in 1 day")
WORD = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?|\w+(?:[./-]\w+)*")  # a time is one word: "Jun 2024 09" is no day
MAX_WORDS = 5
# Two bases far apart: an expression that parses to different days against them is relative.
BASES = (datetime(2001, 6, 15, 12), datetime(2011, 2, 10, 12))


@cache
def date_words() -> frozenset[str]:
    """Month and weekday names and their abbreviations, and the words for yesterday, today and
    tomorrow, in every language of LANGUAGES, from dateparser's own locale data (lower case; words
    under three letters, such as "mo" or "sa", are left out: too common to be worth a parse)."""
    from dateparser.languages.loader import default_loader

    keys = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
            "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
            "saturday", "sunday")  # fmt: skip
    words = set(ENGLISH_RELATIVE)
    for code in LANGUAGES:
        info = default_loader.get_locale(code).info
        days = info.get("relative-type", {})
        for names in [*(info.get(key, []) for key in keys), *(days.get(k, []) for k in RELATIVE_DAYS)]:
            words.update(name.lower().rstrip(".") for name in names if " " not in name)
    return frozenset(word for word in words if len(word) >= 3)


@cache
def _locale_words() -> frozenset[str]:
    """Every word anywhere in the locale data of LANGUAGES (month names, relative phrases such as
    "il y a", simplifications): a word of a multi-word expression may mean nothing alone."""
    from dateparser.languages.loader import default_loader

    def strings(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [s for key, value in node.items() for s in (*strings(key), *strings(value))]
        if isinstance(node, list | tuple):
            return [s for value in node for s in strings(value)]
        return []

    info = [default_loader.get_locale(code).info for code in LANGUAGES]
    return frozenset(w.lower() for s in strings(info) for w in re.findall(r"\w+", s))


@cache
def known(word: str) -> bool:
    """False for a word dateparser cannot read in any locale of LANGUAGES: no digit, in none of their
    locale data, and no token or time zone any of them accepts alone. A run holding it parses to None."""
    from dateparser.conf import Settings
    from dateparser.languages.loader import default_loader

    if any(c.isdigit() for c in word) or word.lower() in _locale_words():
        return True
    locales = [default_loader.get_locale(code) for code in LANGUAGES]
    return any(locale.is_applicable(word, strip_timezone=True, settings=Settings()) for locale in locales)


@lru_cache(maxsize=16)
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
    """Dates written with digits; the ISO form itself is `exact`."""
    found = []
    for m in YMD.finditer(text):
        day = safe_date(*(int(g) for g in m.groups()))
        if day:
            found.append(Reading(day, m.span(), "exact" if m.group() == day.isoformat() else "normalised"))
    for m in AB_Y.finditer(text):
        a, b, y = (int(g) for g in m.groups())
        years = [y] if len(m.group(3)) == 4 else [2000 + y, 1900 + y]
        days = {d for year in years for d in (safe_date(year, b, a), safe_date(year, a, b)) if d}
        found += [Reading(d, m.span(), "normalised") for d in sorted(days)]
    return found


class WrittenDates:
    """Dates in words, read by dateparser run by run; `reference` (with its `anchor` label) resolves
    the relative ones."""

    def __init__(self, text: str, reference: date | None, anchor: str | None):
        self.text, self.reference, self.anchor = text, reference, anchor
        self.words = [m.span() for m in WORD.finditer(text)]
        self._parsed = _parses(text)

    def _runs(self, hit: int) -> list[tuple[int, int]]:
        """Every run of up to MAX_WORDS words that holds word `hit` and only words some locale knows;
        without a reference date, only runs with a digit (a day in words alone, "Friday", means a day
        only against a reference)."""
        words, runs = self.words, []
        near = range(max(0, hit - MAX_WORDS + 1), min(hit + MAX_WORDS, len(words)))
        readable = {k: known(self.text[words[k][0] : words[k][1]]) for k in near}
        for i in range(max(0, hit - MAX_WORDS + 1), hit + 1):
            if not all(readable[k] for k in range(i, hit)):
                continue
            for j in range(hit, min(i + MAX_WORDS, len(words))):
                if not readable[j]:
                    break
                span = (words[i][0], words[j][1])
                if self.reference is not None or any(c.isdigit() for c in self.text[span[0] : span[1]]):
                    runs.append(span)
        return runs

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
            if self.text[start:end].lower().rstrip(".") not in date_words():
                continue
            meant = [(run, m) for run in self._runs(hit) if (m := self._meaning(self.text[run[0] : run[1]]))]
            absolute = [(run, day) for run, (day, fixed) in meant if fixed]
            relative = [(run, day) for run, (day, fixed) in meant if not fixed]
            fixed_days = sorted({day for _, day in absolute})
            found += [Reading(d, _shortest(absolute, d), "normalised") for d in fixed_days]
            found += [
                Reading(d, _shortest(relative, d), "derived", self.anchor)
                for d in sorted({day for _, day in relative} - set(fixed_days))
            ]
        return found


def _shortest(runs: list[tuple[tuple[int, int], date]], day: date) -> tuple[int, int]:
    return min((run for run, meant in runs if meant == day), key=lambda run: run[1] - run[0])
