"""Spans of a record's text that a quoted field may copy, and what the reasoning notes mention.

A quote field's candidates are exact slices of the text that people give as answers: e-mail addresses
and phone numbers, the words after a cue the field's description names ("paid by", "Project:",
"Regards,"), capitalised runs (names, companies), whole lines and their segments (a name's line also
without the registration number in brackets that ends it), runs of adjacent
lines (an address), these three taking turns so that none crowds out the others on a long text, then
word n-grams inside one line (CJK characters one word each); `x-base-form` fields are also offered
each span's base form. `Mentions` orders them: what the notes say comes first,
so it survives the bound (tasks.grounding.candidates).

Every match here passes `concurrent=False`. By default the `regex` module lets go of the interpreter
lock for each match and takes it back after; with the 64 to 256 records a GPU server keeps in flight,
each of those thousands of short matches a record makes then waits its turn among all the threads,
and a record cost 22 ms of CPU at 64 in flight where it cost 2 ms at 16 (issue 31). Matching these
short texts is quicker than handing the lock over.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from functools import lru_cache

import regex

from formwork.tasks.grounding.cues import SIGN_OFFS, cue_pattern
from formwork.tasks.grounding.dates import AB_Y, YMD
from formwork.tasks.grounding.evidence import LEMMA_LANGUAGES
from formwork.tasks.grounding.reading import RECORDS_KEPT

MAX_WORDS = 8
WORD = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]|[\p{L}\p{N}](?:[\p{L}\p{N}'’.&+\-/]*[\p{L}\p{N}])?")
EMAIL = regex.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
# A phone within a line ("(415) 555-0132" whole), never a piece of a longer token: not after a digit
# or a letter of a spaced script ("89 3704 0044" of an IBAN's "DE89 3704 0044"; CJK text writes
# "电话0755-8666-1234" and "02-555-1234입니다"), nor inside a time ("30-11" of "10:30-11:45").
SPACED = r"\p{N}\p{Latin}\p{Cyrillic}\p{Greek}"
PHONE = regex.compile(rf"(?<![{SPACED}]|\d:)\+?\(?\d[\d \t\u00a0().\-/]{{5,}}\d(?![{SPACED}]|:\d)")

Ranked = tuple[bool, int, int, int, str]  # a span's rank: (not said, kind, words, start, span)


class Mentions:
    """What the reasoning notes mention, word for word (the words of `WORD`, case-folded, so CJK
    characters count one by one): "2" is not mentioned by "77.25", nor "Jo" by "Jones"."""

    def __init__(self, notes: str):
        words = [m.group().casefold() for m in WORD.finditer(notes, concurrent=False)]
        self.ngrams = {
            tuple(words[i : i + n]) for n in range(1, MAX_WORDS + 1) for i in range(len(words) - n + 1)
        }

    def __bool__(self) -> bool:
        return bool(self.ngrams)

    def __contains__(self, written: str) -> bool:
        return self.said(tuple(m.group().casefold() for m in WORD.finditer(written, concurrent=False)))

    def said(self, words: tuple[str, ...]) -> bool:
        return words in self.ngrams


class TextWords:
    """A text's words (those of `WORD`, case-folded), found once, so that the words of each of its
    hundreds of candidate spans are looked up rather than matched again (issue 31)."""

    def __init__(self, text: str):
        found = list(WORD.finditer(text, concurrent=False))
        self.starts, self.ends = [m.start() for m in found], [m.end() for m in found]
        self.folded = [m.group().casefold() for m in found]

    def within(self, start: int, end: int) -> tuple[str, ...] | None:
        """The words of text[start:end], as `WORD` would find them in that slice; None when a word of
        the text runs across either end (the slice would cut it, and find other words)."""
        first, last = bisect_left(self.starts, start), bisect_right(self.ends, end)
        if (first > 0 and self.ends[first - 1] > start) or (
            last < len(self.starts) and self.starts[last] < end
        ):
            return None
        return tuple(self.folded[first:last])


@lru_cache(maxsize=RECORDS_KEPT)
def _text_words(text: str) -> TextWords:
    """One `TextWords` per text, shared by the record's quote fields and its attempts."""
    return TextWords(text)


CONNECTORS = frozenset({"&", "and", "of", "de", "del", "van", "von", "der", "la", "le", "y", "du", "da"})
SEGMENT = regex.compile(r"\s*(?:[,;|•·]|\s[-–—]\s|:\s)\s*")
CUE_WORDS = 4  # words after a cue on its line
JOINED_LINES = 4  # adjacent lines joined at most (an address, a signature block)
# A line's closing bracket that numbers what the line names, a registration or company number of four
# digits or more ("99 SPEED MART S/B (519537-X)", "(CO. NO. 113825-W)"), not a remark ("(class rep,
# 3B)"): the line without it is offered too, or only the name with its number, or a part of the name,
# could be chosen.
NUMBERED_TAIL = regex.compile(r"\s*\([^(),\n]*\d{4}[^(),\n]*\)$")


def _lines(text: str) -> list[tuple[int, int]]:
    """Each non-blank line's (start, end) without its edge spaces."""
    found = []
    for line in regex.finditer(r"[^\n]+", text, concurrent=False):
        stripped = line.group().strip()
        if stripped:
            start = line.start() + line.group().index(stripped)
            found.append((start, start + len(stripped)))
    return found


def _joined(text: str, lines: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Each run of two to JOINED_LINES adjacent lines (no blank line between), as (start, end)."""
    for i in range(len(lines)):
        for j in range(i + 1, min(i + JOINED_LINES, len(lines))):
            if text.count("\n", lines[j - 1][1], lines[j][0]) != 1:
                break
            yield lines[i][0], lines[j][1]


@lru_cache(maxsize=RECORDS_KEPT)
def line_runs(text: str) -> frozenset[str]:
    """Every whole line of the text and run of adjacent lines that quote_spans offers, as written."""
    lines = _lines(text)
    return frozenset(text[start:end] for start, end in [*lines, *_joined(text, lines)])


def _capitalised(text: str, words: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Runs of two or more capitalised words of one line (names, companies), connectors inside
    ("Marks & Spencer", "Bank of America"), the whole run first, then its parts."""
    runs: list[list[tuple[int, int]]] = [[]]
    for start, end in words:
        word, gap = text[start:end], text[runs[-1][-1][1] : start] if runs[-1] else ""
        if runs[-1] and gap.strip(" &"):
            runs.append([])
        if word[:1].isupper() or (runs[-1] and word.casefold() in CONNECTORS):
            runs[-1].append((start, end))
        elif runs[-1]:
            runs.append([])
    found = []
    for run in runs:
        while run and text[run[-1][0] : run[-1][1]].casefold() in CONNECTORS:
            run.pop()
        for n in range(min(len(run), MAX_WORDS), 1, -1):
            found += [(run[i][0], run[i + n - 1][1]) for i in range(len(run) - n + 1)]
    return found


def _after_cues(text: str, cues: tuple[str, ...], lines: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """What follows each cue word: the next one to CUE_WORDS words of its line, or, where the cue ends
    its line ("Regards,"), the next line and the next two lines joined."""
    found = []
    for cue in cues:
        for match in cue_pattern(cue).finditer(text, concurrent=False):
            line_end = text.find("\n", match.end())
            rest = text[match.end() : len(text) if line_end < 0 else line_end]
            words = [
                (m.start() + match.end(), m.end() + match.end())
                for m in WORD.finditer(rest, concurrent=False)
            ]
            if words and cue in SIGN_OFFS:
                continue  # "Thanks for the quick turnaround": not a signature
            if words:
                found += [(words[0][0], words[n - 1][1]) for n in range(1, min(len(words), CUE_WORDS) + 1)]
            else:
                after = [line for line in lines if line[0] > match.end()][:2]
                found += [after[0], (after[0][0], after[-1][1])] if after else []
    return found


@lru_cache(maxsize=RECORDS_KEPT)
def cued_starts(text: str, cues: tuple[str, ...]) -> frozenset[int]:
    """Where the text starts a value right after one of `cues` (the first word after the cue, or the
    line after a sign-off): a span starting there is one the text labels with the field's cue."""
    return frozenset(start for start, _ in _after_cues(text, cues, _lines(text)))


@lru_cache(maxsize=RECORDS_KEPT)
def quote_spans(text: str, max_length: int, notes: str = "", cues: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Every span a quoted field may copy (exact slices of the text), unbounded, in the order the bound
    keeps them: e-mails and phones; then what the notes mention; then the spans after the field's
    `cues`; capitalised runs (with an abbreviation's dot), whole lines and their segments, and runs of
    adjacent lines joined as the text joins them, taking turns (`_taking_turns`); last word n-grams
    within a line, short and early first; none of them cuts an e-mail or a phone (kept for the last
    RECORDS_KEPT calls: fields of one record differ only in `max_length` and cues)."""
    found: dict[str, None] = {}
    # "2024-03-14" and "14.03.2024" have a phone's shape, but the date reader's numeric forms
    phones = (m for m in PHONE.finditer(text, concurrent=False) if not _numeric_date(m.group()))
    tokens = [*EMAIL.finditer(text, concurrent=False), *phones]
    found.update((token.group(), None) for token in tokens)
    whole = [token.span() for token in tokens]  # no span cuts one: "02) 9876 5432", "fastship.com"
    mentioned = Mentions(notes)
    text_words = _text_words(text) if mentioned else None  # only what the notes mention needs words
    lines = _lines(text)
    ranked: list[Ranked] = []

    def offer(kind: int, start: int, end: int, n: int = 0) -> None:
        """Rank text[start:end]; an n-gram (kind 5) of `n` words ranks by its length."""
        if 0 < end - start <= max_length and not any(
            s < end and start < e and not start <= s < e <= end for s, e in whole
        ):
            span, said = text[start:end], False
            if text_words is not None:
                words = text_words.within(start, end)
                said = span in mentioned if words is None else mentioned.said(words)
            ranked.append((not said, kind, n, start, span))

    for start, end in _after_cues(text, cues, lines):
        offer(0, start, end)
    for line_start, line_end in lines:
        line = text[line_start:line_end]
        words = [
            (m.start() + line_start, m.end() + line_start) for m in WORD.finditer(line, concurrent=False)
        ]
        for start, end in _capitalised(text, words):
            offer(1, start, end)
            if _abbreviated(text, start, end):
                offer(1, start, end + 1)  # "FastShip Inc." with its dot
        offer(2, line_start, line_end)
        for part in SEGMENT.split(text[line_start:line_end], concurrent=False):
            if part and part != text[line_start:line_end]:
                at = text.find(part, line_start, line_end)
                offer(2, at, at + len(part))
        if (number := NUMBERED_TAIL.search(line, concurrent=False)) and number.start() > 0:
            offer(2, line_start, line_start + number.start())  # "99 SPEED MART S/B" of "... (519537-X)"
        for n in range(1, MAX_WORDS + 1):
            for i in range(len(words) - n + 1):
                offer(5, words[i][0], words[i + n - 1][1], n)
    for start, end in _joined(text, lines):
        offer(3, start, end)
    found.update(dict.fromkeys(_taking_turns(ranked)))
    return tuple(found)


def _taking_turns(ranked: list[Ranked]) -> list[str]:
    """The spans in the order the bound keeps them, capitalised runs, lines and joined runs of lines
    (kinds 1-3) taking turns, each kind's own best (fewest words, earliest) first: on an OCR'd receipt
    in capitals hundreds of capitalised runs came before any joined run, so the bound cut every address
    of several lines. Cued spans (kind 0) still come first, n-grams (kind 5) last, and what the notes
    say before the rest."""
    turns: dict[tuple[bool, int], int] = {}
    keyed = []
    for unsaid, kind, n, start, span in sorted(ranked):
        turn = turns[(unsaid, kind)] = turns.get((unsaid, kind), -1) + 1
        tier = 1 if kind in (1, 2, 3) else kind
        keyed.append((unsaid, tier, turn, kind, n, start, span))
    return [span for *_, span in sorted(keyed)]


def _abbreviated(text: str, start: int, end: int) -> bool:
    """Whether the run text[start:end] ends in an abbreviation whose dot follows it ("Inc.", "Ltd.",
    "S.L.", "Jr."): a word of at most four letters, capitalised, before a dot."""
    last = text[start:end].rsplit(None, 1)[-1]
    return text[end : end + 1] == "." and len(last.replace(".", "")) <= 4 and last[:1].isupper()


def _numeric_date(token: str) -> bool:
    return bool(YMD.fullmatch(token) or AB_Y.fullmatch(token))


def base_forms(span: str) -> list[str]:
    """`span` with every word in its base form, in each language the checker lemmatises: a field that
    asks for the base form ("x-base-form": the item, singular) is backed by the text's "eggs", so its
    candidates must offer "egg" too, or the grammar forbids the answer the checker wants."""
    import simplemma

    def in_base_form(span: str, lang: str) -> str:
        words = regex.split(r"(\w+)", span, concurrent=False)
        bases = [simplemma.lemmatize(w, lang=lang) if i % 2 else w for i, w in enumerate(words)]
        return "".join(b if b.lower() != w.lower() else w for b, w in zip(bases, words, strict=True))

    return [in_base_form(span, lang) for lang in LEMMA_LANGUAGES]
