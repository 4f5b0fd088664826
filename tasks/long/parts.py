"""Split a long text into parts that each fit the model's context, on the text's own natural units.

A cut in the middle of a line item, a table row or a signature loses a value in both parts, so parts
end where the text does: between mail messages (a `From:` header, "On ... wrote:", a forwarded or
original-message marker), then paragraphs, then lines, then sentences (CJK ones end in 。！？ with no
space), and only a single sentence too long for any part is cut by characters. A unit is broken into
the next, finer kind only when it does not fit whole.

Consecutive parts overlap by at least one unit (the previous part's last line, or its last sentence
when that line is long), so an item that straddles two parts is read whole in one of them; the merge
(tasks/long/merge.py) drops the copy the other part read. A table's header row is repeated at the top of
each part that starts among its rows, so each part knows what its columns are.

Size is the caller's `fits`: in the engines' tokens, against the room tasks/fit.py leaves the source
text (a text whose bytes fit is not counted, as a token is at least one byte).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from formwork.tasks.long.layout import MESSAGE, table_headers

Span = tuple[int, int]
PARAGRAPH = re.compile(r"\n[ \t]*\n")
LINE = re.compile(r"\n")
SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


class Piece(Protocol):
    """What a merge reads of each piece of a text: where it stands in the whole, the text a model read,
    and where each of its characters stood (a `Part`, or a list's unit or header text,
    tasks/long/units.py)."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    def text(self, whole: str) -> str: ...

    def to_whole(self, position: int) -> int: ...


@dataclass(frozen=True)
class Part:
    """One part of a long text: the text a model reads, and where each of its characters stood in the
    whole. `text` is `header + whole[start:end]`, where `header` (a table's header row, or "") stood at
    `header_at` in the whole text."""

    start: int
    end: int
    header: str = ""
    header_at: int = 0

    def text(self, whole: str) -> str:
        return self.header + whole[self.start : self.end]

    def to_whole(self, position: int) -> int:
        """Where the character at `position` of this part's text stands in the whole text."""
        if position < len(self.header):
            return self.header_at + position
        return self.start + position - len(self.header)


def _pieces(text: str, span: Span, pattern: re.Pattern[str], before: bool) -> list[Span]:
    """`span` cut at each match of `pattern`: before it (a message header starts the next piece) or
    after it (a newline ends its line)."""
    start, end = span
    cuts = [m.start() if before else m.end() for m in pattern.finditer(text, start, end)]
    bounds = [start, *(c for c in cuts if start < c < end), end]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


LEVELS: tuple[tuple[re.Pattern[str], bool], ...] = (
    (MESSAGE, True), (PARAGRAPH, False), (LINE, False), (SENTENCE, False),
)  # fmt: skip


def natural_spans(
    text: str, fits: Callable[[str], bool], span: Span | None = None, level: int = 0
) -> Iterator[Span]:
    """`text` (or its `span`) as consecutive spans that each fit, each as coarse a unit as fits, in
    text order and lazily: a plan that stops after `max_parts` parts never looks at the rest."""
    span = span or (0, len(text))
    if fits(text[span[0] : span[1]]):
        yield span
        return
    if level == len(LEVELS):
        middle = (span[0] + span[1]) // 2  # one sentence too long for any part: halve it
        if middle == span[0]:
            yield span
            return
        yield from natural_spans(text, fits, (span[0], middle), level)
        yield from natural_spans(text, fits, (middle, span[1]), level)
        return
    pieces = _pieces(text, span, *LEVELS[level])
    if len(pieces) == 1:
        yield from natural_spans(text, fits, span, level + 1)
        return
    for piece in pieces:
        yield from natural_spans(text, fits, piece, level + 1)


def _overlap_start(text: str, part: Span) -> int:
    """Where the next part starts: the start of this part's last line that holds something, or of its
    last sentence when that line (and what follows it) is over a quarter of the part."""
    start, end = part
    stop = start + len(text[start:end].rstrip())  # the last line that holds something
    line = max(text.rfind("\n", start, max(start, stop - 1)) + 1, start)
    if (end - line) * 4 > end - start:
        sentences = [m.end() for m in SENTENCE.finditer(text, line, max(line, stop - 1))]
        line = sentences[-1] if sentences else end
    return line


def _furthest(first: int, fits: Callable[[int], bool], known: Callable[[int], bool]) -> int:
    """The largest index from `first` on for which `fits` holds, where it holds up to some index and
    not after (a longer part never fits where a shorter one does not), and `known(i)` says whether
    index i exists. Steps double until one does not fit, then the gap is halved: a part of n units
    costs about 2 log2 n checks, where growing it a unit at a time cost n (each a tokenizer call on a
    server)."""
    good, step = first, 1
    while known(good + step) and fits(good + step):
        good, step = good + step, step * 2
    bad = good + step  # does not fit, or lies past the last unit
    while bad - good > 1:
        middle = (good + bad) // 2
        if known(middle) and fits(middle):
            good = middle
        else:
            bad = middle
    return good


def split_text(text: str, fits: Callable[[str], bool], max_parts: int | None = None) -> list[Part]:
    """`text` as parts that each fit, on natural units, overlapping by one unit; one part if it fits.
    With `max_parts`, planning stops once that many are planned: the caller cuts after the last."""
    if fits(text):
        return [Part(0, len(text))]
    tables = table_headers(text)
    found, spans = natural_spans(text, fits), list[Span]()

    def known(index: int) -> bool:
        """Whether unit `index` exists, finding units as far as needed and no further."""
        while len(spans) <= index:
            span = next(found, None)
            if span is None:
                return False
            spans.append(span)
        return True

    def part(start: int, end: int) -> Part:
        for table_start, header_end, table_end in tables:
            if header_end <= start < table_end:
                return Part(start, end, text[table_start:header_end], table_start)
        return Part(start, end)

    parts: list[Part] = []
    index, start = 0, 0
    while known(index) and (max_parts is None or len(parts) < max_parts):
        if parts and not fits(part(start, spans[index][1]).text(text)):
            start = spans[index][0]  # the overlap and the next unit do not fit together: no overlap
        index = _furthest(index, lambda k, at=start: fits(part(at, spans[k][1]).text(text)), known)
        chosen = part(start, spans[index][1])
        if not fits(chosen.text(text)):
            chosen = Part(start, spans[index][1])  # a unit that fits only without the table's header row
        parts.append(chosen)
        index += 1
        if known(index):
            following = _overlap_start(text, (start, spans[index - 1][1]))
            start = following if start < following < spans[index][0] else spans[index][0]
    return parts
