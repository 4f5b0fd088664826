"""The words dateparser can read as dates, from its own locale data, so the date reader asks it only
about runs that hold one (`tasks.grounding.dates`).

A month, a weekday or a relative day ("yesterday", "hier", "gestern") in one of LANGUAGES marks where
a written date may stand; a word no locale knows ("Taxi", "airport") makes dateparser refuse the whole
run, so a run holding one is never asked (`known`).
"""

from __future__ import annotations

import re
from functools import cache

# dateparser is asked only about stretches that hold a word it could read as a date: a month, a weekday
# or a relative day in one of these languages; dateparser reads the few words around it.
LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "pl")  # numeric and CJK forms need no language
ENGLISH_RELATIVE = ("ago", "last", "next")  # "3 days ago", "last Friday"
RELATIVE_DAYS = ("1 day ago", "0 day ago", "in 1 day", "2 day ago", "in 2 day")  # "vorgestern", "anteontem"
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")  # fmt: skip


def _names_in_locales(keys: tuple[str, ...], abbreviations: bool = True) -> frozenset[str]:
    """The names under `keys` and the words for yesterday, today and tomorrow, in every language of
    LANGUAGES, from dateparser's own locale data (lower case; words under three letters, such as "mo"
    or "sa", are left out: too common to be worth a parse). Without `abbreviations`, a name of four
    letters or fewer that begins a longer name of the same key ("mon" of "monday", "mit" of
    "mittwoch") is left out too."""
    from dateparser.languages.loader import default_loader

    words: set[str] = set()
    for code in LANGUAGES:
        info = default_loader.get_locale(code).info
        days = info.get("relative-type", {})
        for key in keys:
            names = [name.lower().rstrip(".") for name in info.get(key, []) if " " not in name]
            words.update(n for n in names if abbreviations or not _abbreviated(n, names))
        for names in (days.get(k, []) for k in RELATIVE_DAYS):
            words.update(name.lower() for name in names if " " not in name)
    return frozenset(word for word in words if len(word) >= 3)


def _abbreviated(name: str, names: list[str]) -> bool:
    return len(name) <= 4 and any(len(other) > len(name) and other.startswith(name) for other in names)


@cache
def date_words() -> frozenset[str]:
    """Month and weekday names and their abbreviations, and the relative day words, in every language
    (and English's own relative words)."""
    return _names_in_locales(MONTHS + WEEKDAYS) | frozenset(ENGLISH_RELATIVE)


@cache
def day_words() -> frozenset[str]:
    """The date words that name a day by themselves: weekdays written out and the words for
    yesterday, today and tomorrow (not months: "June" is no day), in every language of LANGUAGES.
    An abbreviation names a day only beside a day number ("Mon 3 June"): alone, "mit" is German's
    "with", "mon" French's "my", "son", "die", "sun" and "nie" are words, and each was read as a
    weekday ("Kaffee mit Anna" as last Wednesday), unless the text sets it apart (`set_apart`)."""
    return _names_in_locales(WEEKDAYS, abbreviations=False)


@cache
def weekday_abbreviations() -> frozenset[str]:
    """The weekday names `day_words` leaves out: "mon", "tue", "mit", "sáb"."""
    return _names_in_locales(WEEKDAYS) - day_words()


@cache
def month_words() -> frozenset[str]:
    """Month names and their abbreviations in every language of LANGUAGES (and the relative days)."""
    return _names_in_locales(MONTHS)


@cache
def weekdays_named() -> dict[str, frozenset[int]]:
    """Every weekday name and abbreviation in LANGUAGES, lower case, to the weekdays it names (Monday
    0): a day read from a run that names a weekday must fall on it ("Sat 3 hours" is no 20 March, a
    Thursday). A word that is also a month's name ("mar") names no weekday for certain."""
    from dateparser.languages.loader import default_loader

    named: dict[str, set[int]] = {}
    for code in LANGUAGES:
        info = default_loader.get_locale(code).info
        for n, key in enumerate(WEEKDAYS):
            for name in info.get(key, []):
                named.setdefault(name.lower().rstrip("."), set()).add(n)
    months = month_words()
    return {word: frozenset(days) for word, days in named.items() if word not in months}


@cache
def weekday_numbers() -> dict[str, int]:
    """English weekday names and abbreviations, lower case, to their number (Monday 0)."""
    from dateparser.languages.loader import default_loader

    info = default_loader.get_locale("en").info
    return {name.lower().rstrip("."): n for n, key in enumerate(WEEKDAYS) for name in info.get(key, [])}


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
