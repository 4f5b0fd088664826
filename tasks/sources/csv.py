"""CSV input: one record per row, read as a stream, with a broken row costing only itself.

The csv module in strict mode finds a quote that is never closed (or text after a closing quote); the
row's first line then becomes a record with the problem and the lines that the quote swallowed are
read again as rows of their own, so a stray quote never merges the rest of the file into one cell. A
row whose field count differs from the header's is a problem too: a shifted row would put the wrong
value into `text`. One case is valid CSV and cannot be told apart: a stray quote closed by a later
line's quote at a cell boundary, leaving the header's field count; such a row, like every row with a
quoted line break, carries a warning that names the lines it runs over. A row that runs over lines
with the wrong field count is read as a stray quote: its lines become records of their own.

The header is checked when the input is opened, so a missing `text` column refuses the run before
anything is written.
"""

from __future__ import annotations

import csv
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from formwork.tasks.sources.jsonl import refuse_wide_encodings
from formwork.tasks.sources.keys import KeyBook, content_key
from formwork.tasks.sources.records import InputRecord, SourceProblem, Warnings, decode, finished

FIELD_LIMIT = 64 * 1024 * 1024  # characters in one cell; the csv module's default is 128 KiB


@dataclass
class Row:
    start: int  # the physical line where the row begins
    lines: list[str]  # the physical lines it used (only the first when it is broken)
    fields: list[str]
    error: str | None = None


class _LineFeed:
    """Physical lines for csv.reader, remembering which ones the current row used, so that a broken
    row's lines can be read again."""

    def __init__(self, handle: TextIO) -> None:
        self._lines = enumerate(handle, start=1)
        self.pending: deque[tuple[int, str]] = deque()
        self.used: list[tuple[int, str]] = []

    def __iter__(self) -> _LineFeed:
        return self

    def __next__(self) -> str:
        item = self.pending.popleft() if self.pending else next(self._lines)
        self.used.append(item)
        return item[1]


def _rows(handle: TextIO, width: int | None = None) -> Iterator[Row]:
    """Every row; one that runs over lines and does not fit `width` fields is broken, like a csv error."""
    csv.field_size_limit(max(csv.field_size_limit(), FIELD_LIMIT))  # only ever raised, never lowered
    feed = _LineFeed(handle)
    reader = csv.reader(feed, strict=True)
    while True:
        feed.used = []
        try:
            fields = next(reader)
            error = None
        except StopIteration:
            return
        except csv.Error as exc:
            fields, error = [], str(exc)
        used = feed.used
        if error is None and width is not None and len(used) > 1 and len(_trimmed(fields, width)) != width:
            error = f"a quoted field runs to line {used[-1][0]} and leaves {len(fields)} fields"
        if error is None:
            yield Row(used[0][0], [line for _, line in used], fields)
            continue
        feed.pending.extendleft(reversed(used[1:]))  # read again what the broken row swallowed
        reader = csv.reader(feed, strict=True)  # a parser without the broken row's state
        yield Row(used[0][0], [used[0][1]], [], f"{error}; the header has {width} fields" if width else error)


def _trimmed(fields: list[str], width: int) -> list[str]:
    """Empty cells past the header's width (a trailing comma) are harmless."""
    end = len(fields)
    while end > width and fields[end - 1] == "":
        end -= 1
    return fields if end == len(fields) else fields[:end]  # one copy: a row of a million commas is linear


def _open(path: Path) -> TextIO:
    """Text with a UTF-8 BOM dropped; bad bytes kept as surrogates to be replaced (with a warning) per row."""
    return path.open(encoding="utf-8-sig", errors="surrogateescape", newline="")


def _as_text(cell: str, warnings: Warnings) -> str:
    return decode(cell.encode("utf-8", errors="surrogateescape"), warnings)


def read_csv(path: Path, book: KeyBook) -> Iterator[InputRecord]:
    refuse_wide_encodings(path)
    with _open(path) as handle:
        header = next((row for row in _rows(handle) if row.fields or row.error), None)
    if header is not None and header.error:
        raise SourceProblem(f"{path}: the CSV header cannot be read: {header.error}")
    names = [_as_text(name, Warnings()).strip() for name in (header.fields if header else [])]
    if "text" not in names:
        shown = f"{names[:20]} and {len(names) - 20} more" if len(names) > 20 else str(names)  # one line
        raise SourceProblem(f"{path}: a CSV input needs a 'text' column (found: {shown})")
    counts = Counter(names)  # one pass: a header of a million columns is checked in a second, not hours
    repeated = next((name for name in names if counts[name] > 1), None)
    if repeated is not None:
        raise SourceProblem(f"{path}: the column {repeated!r} appears twice in the header")
    return _records(path, names, book)


def _records(path: Path, names: list[str], book: KeyBook) -> Iterator[InputRecord]:
    with _open(path) as handle:
        rows = _rows(handle, len(names))
        next(row for row in rows if row.fields)  # the header, checked above
        for row in rows:
            if row.fields or row.error:  # a blank line is no row
                yield _record(row, names, book)


def _record(row: Row, names: list[str], book: KeyBook) -> InputRecord:
    where, fallback = f"row {row.start}", f"row-{row.start}"
    warnings = Warnings()
    fields = _trimmed(row.fields, len(names))
    if row.error or len(fields) != len(names):
        problem = f"{where} cannot be read as CSV: {row.error}" if row.error else (
            f"{where} has {len(fields)} fields; the header has {len(names)}"
        )  # fmt: skip
        key, _ = book.claim(None, fallback, where)
        line = _as_text("".join(row.lines).rstrip("\r\n"), warnings)
        return finished(InputRecord(key, line, {}, problem), where, warnings)
    cells = dict(zip(names, fields, strict=True))
    text = _as_text(cells["text"], warnings)
    meta: dict[str, object] = {
        name: _as_text(cell, warnings) for name, cell in cells.items() if name not in ("id", "text")
    }
    if not cells.get("id"):  # no id: keyed by its text (a row inserted above moves no key), its place kept
        fallback = content_key(text)
        meta.setdefault("row", row.start)
    key, problem = book.claim(cells.get("id") or None, fallback, where)  # the raw id: a NUL is a problem
    if len(row.lines) > 1:  # legitimate (a quoted cell with line breaks) or a stray quote closed later
        warnings.add(f"the row runs over lines {row.start}-{row.start + len(row.lines) - 1}")
    return finished(InputRecord(key, text, meta, problem), where, warnings)
