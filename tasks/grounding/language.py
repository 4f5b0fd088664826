"""The language a record is written in, so that number words are read in that language only.

"Otto paid the taxi" is English, and "otto" is eight only in Italian; "fire" is four only in Danish,
"elf" eleven only in German and Dutch. Reading the words of eight languages in every text backs
numbers no writer meant, so the number-word reader asks here which languages a text is in.

The detector is py3langid (a maintained fork of langid.py: naive Bayes over byte n-grams, its model
inside the wheel, no download), restricted to the languages Formwork's mail is written in, so a short
text is not attributed to a language nobody writes to it. It is asked only where the script cannot
decide alone: a text with no Latin letters (Chinese, Japanese, Korean, Cyrillic) has no number words to
read (its numerals are `numerals.han_readings`'), and is never classified. The answer is cached per
text. Cost and accuracy on the gold texts: BENCHMARKS.md section 20.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any

from formwork.tasks.grounding.reading import RECORDS_KEPT

# The languages a text is told apart among: those number words are read in, and the other languages
# of the mail that reaches Formwork, so that Polish or Swedish text is not taken for one of the eight.
CANDIDATES = ("en", "fr", "es", "pt", "de", "nl", "da", "it", "pl", "cs", "sv", "no", "ru", "ja", "zh", "ko")
# A short text ("two hundred euros") is no one language for sure: the likeliest languages are read until
# they hold COVER of the detector's belief, each with at least LEAST of it, at most MOST of them.
COVER, LEAST, MOST = 0.9, 0.1, 3
LATIN = re.compile(r"[A-Za-zÀ-ɏ]")


@cache
def _identifier() -> Any:
    """py3langid's model (about 1.5 s to unpack, once a process), told apart among CANDIDATES."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(CANDIDATES))
    return identifier


@lru_cache(maxsize=RECORDS_KEPT)
def languages(text: str) -> tuple[str, ...]:
    """The languages `text` is likely written in, likeliest first: the detector's first, and the next
    ones while it is unsure (a short text); () for a text without Latin letters."""
    if not LATIN.search(text):
        return ()
    chosen, held = [], 0.0
    for code, probability in _identifier().rank(text)[:MOST]:
        if chosen and (held >= COVER or probability < LEAST):
            break
        chosen.append(code)
        held += probability
    return tuple(chosen)
