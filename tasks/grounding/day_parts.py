"""Parts of a day named against the reference date: "last night", "this morning", "tonight" and their
like in the gold's languages, which dateparser reads wrong or not at all.

dateparser reads no "last night", "this morning", "ce matin", "anoche", "stamattina" or "vanochtend",
and where a language writes morning and tomorrow alike (German "Morgen", Dutch "morgen", Spanish
"mañana") it reads tomorrow: "heute Morgen" and "gestern Morgen" were tomorrow and nothing else,
"ayer por la mañana" yesterday and tomorrow, "Guten Morgen" tomorrow. So, from two tables tested per
language:
- a phrase of PHRASES names a day: the reference's own (this morning, tonight, ce soir, esta mañana,
  stamattina, vanavond) or the day before (last night, anoche, gisteravond, letzte Nacht);
- a word of MORNINGS is the morning, not tomorrow, after a word that makes it one ("heute Morgen",
  "Guten Morgen", "am Morgen", "Montag Morgen", "la mañana", "esta mañana", "goede morgen"): it names
  no day of its own;
- a run of words that shares a character with either is never asked of dateparser (`held_spans`, read
  by `dates.WrittenDates`): the day word beside it ("heute", "gestern", "ayer", "hier") is read alone,
  and the phrase whole, here.
Where a day word already stands ("hier soir", "ieri sera", "ontem à noite", "wczoraj wieczorem",
"dziś rano", "hoje de manhã", "heute Abend") dateparser reads that word, and no phrase is needed. A
phrase that means either of two days, last night or tonight ("cette nuit", "stanotte", "vannacht"), is
in neither table and names no day ("heute Nacht" is read by its "heute"). After an article or a
possessive "last night" is an ordinal ("the last night of the trip", "die letzte Nacht"): no day.
Every reading is `derived`.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from formwork.tasks.grounding.reading import Reading

# The day each phrase names, counted from the reference date (its words apart by any space).
PHRASES = {
    -2: ("the night before last", "anteanoche", "eergisteravond"),
    -1: ("last night", "last evening", "letzte nacht", "la nuit dernière", "anoche", "a noite passada",
         "gisteravond", "gisterochtend", "gistermorgen", "gistermiddag", "gisternacht", "zeszłej nocy",
         "ubiegłej nocy"),
    0: ("this morning", "this afternoon", "this evening", "tonight", "ce matin", "cet après-midi",
        "ce midi", "ce soir", "esta mañana", "esta tarde", "esta noche", "esta manhã", "esta noite",
        "stamattina", "stamani", "stamane", "stasera", "questa mattina", "questo pomeriggio",
        "questa sera", "vanochtend", "vanmorgen", "vanmiddag", "vanavond", "deze morgen", "diesen morgen"),
}  # fmt: skip
# After an article or a possessive a phrase is an ordinal: "the last night of the trip", "die letzte Nacht".
ORDINAL_AFTER = re.compile(r"(?<!\w)(?:the|our|my|his|her|their|your|its|that|every|die|der|den|unsere|meine|"
                           r"seine|ihre|eine|jede)\s+$", re.I)  # fmt: skip
# A word for tomorrow that is the morning after one of these words (`morning`: the word alone).
MORNINGS = [
    re.compile(rf"(?<!\w)(?:{before})\s+(?P<morning>{word})(?!\w)", re.I)
    for before, word in (
        ("heute|gestern|vorgestern|guten|am|jeden|diesen|ganzen|nächsten|frühen|eines|montag|dienstag|"
         "mittwoch|donnerstag|freitag|samstag|sonnabend|sonntag", "morgen"),
        ("goede|deze|gisteren|eergisteren|vandaag|elke|iedere|hele|maandag|dinsdag|woensdag|donderdag|"
         "vrijdag|zaterdag|zondag", "morgen"),
        ("la|esta|cada|una|media", "mañana"),
    )
]  # fmt: skip
OFFSETS = {phrase: n for n, phrases in PHRASES.items() for phrase in phrases}
PHRASE = re.compile(
    "|".join(
        r"(?<!\w)" + r"\s+".join(re.escape(word) for word in phrase.split()) + r"(?!\w)"
        for phrase in sorted(OFFSETS, key=len, reverse=True)
    ),
    re.I,
)


def _named(text: str) -> list[re.Match[str]]:
    """The phrases of PHRASES that `text` writes as a day, not after an article ("the last night")."""
    return [
        m for m in PHRASE.finditer(text) if not ORDINAL_AFTER.search(text, max(0, m.start() - 12), m.start())
    ]


def held_spans(text: str) -> list[tuple[int, int]]:
    """Where a phrase of PHRASES or a morning word of MORNINGS is written: no run of words that shares a
    character with one is asked of dateparser."""
    held = [m.span() for m in PHRASE.finditer(text)]
    return held + [m.span("morning") for pattern in MORNINGS for m in pattern.finditer(text)]


def day_part_readings(text: str, reference: date | None, anchor: str | None) -> list[Reading]:
    """The day each phrase of PHRASES in `text` names, against `reference` (none without one)."""
    if reference is None:
        return []
    found = []
    for m in _named(text):
        offset = OFFSETS[" ".join(m.group().lower().split())]
        found.append(Reading(reference + timedelta(days=offset), m.span(), "derived", anchor))
    return found
