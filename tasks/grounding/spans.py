"""Spans of a record's text that a quoted field may copy, and what the reasoning notes mention.

A quote field's candidates are word n-grams inside one line (exact slices of the text, CJK characters
one word each), plus every e-mail address and phone number; `x-base-form` fields are also offered each
span's base form. `Mentions` orders them: what the notes say comes first, so it survives the bound
(tasks.grounding.candidates).
"""

from __future__ import annotations

from functools import lru_cache

import regex

from formwork.tasks.grounding.evidence import LEMMA_LANGUAGES

MAX_WORDS = 8
WORD = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]|[\p{L}\p{N}](?:[\p{L}\p{N}'’.&+\-/]*[\p{L}\p{N}])?")
EMAIL = regex.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
PHONE = regex.compile(r"\+?\d[\d\s().\-/]{5,}\d")


class Mentions:
    """What the reasoning notes mention, word for word (the words of `WORD`, case-folded, so CJK
    characters count one by one): "2" is not mentioned by "77.25", nor "Jo" by "Jones"."""

    def __init__(self, notes: str):
        words = [m.group().casefold() for m in WORD.finditer(notes)]
        self.ngrams = {
            tuple(words[i : i + n]) for n in range(1, MAX_WORDS + 1) for i in range(len(words) - n + 1)
        }

    def __bool__(self) -> bool:
        return bool(self.ngrams)

    def __contains__(self, written: str) -> bool:
        return self.said(tuple(m.group().casefold() for m in WORD.finditer(written)))

    def said(self, words: tuple[str, ...]) -> bool:
        return words in self.ngrams


@lru_cache(maxsize=16)
def quote_spans(text: str, max_length: int, notes: str = "") -> tuple[str, ...]:
    """Word n-grams within each line (exact slices of the text) and e-mails and phones, unbounded,
    in the order the bound keeps them: tokens, then spans the notes mention, then short and early
    (kept for the last few texts: fields of one record differ only in `max_length`)."""
    found: dict[str, None] = {}
    for token in (*EMAIL.finditer(text), *PHONE.finditer(text)):
        found[token.group()] = None
    mentioned = Mentions(notes)
    noted = bool(mentioned)
    spans: list[tuple[bool, int, int, str]] = []
    for line in regex.finditer(r"[^\n]+", text):
        found_words = list(WORD.finditer(line.group()))
        words = [(m.start() + line.start(), m.end() + line.start()) for m in found_words]
        folded = [m.group().casefold() for m in found_words]
        for n in range(1, MAX_WORDS + 1):
            for i in range(len(words) - n + 1):
                start, end = words[i][0], words[i + n - 1][1]
                if end - start <= max_length:
                    said = noted and mentioned.said(tuple(folded[i : i + n]))
                    spans.append((not said, n, start, text[start:end]))
    ordered = [span for *_, span in sorted(spans)]
    found.update(dict.fromkeys(ordered))
    return tuple(found)


def base_forms(span: str) -> list[str]:
    """`span` with every word in its base form, in each language the checker lemmatises: a field that
    asks for the base form ("x-base-form": the item, singular) is backed by the text's "eggs", so its
    candidates must offer "egg" too, or the grammar forbids the answer the checker wants."""
    import simplemma

    def in_base_form(span: str, lang: str) -> str:
        words = regex.split(r"(\w+)", span)
        bases = [simplemma.lemmatize(w, lang=lang) if i % 2 else w for i, w in enumerate(words)]
        return "".join(b if b.lower() != w.lower() else w for b, w in zip(bases, words, strict=True))

    return [in_base_form(span, lang) for lang in LEMMA_LANGUAGES]
