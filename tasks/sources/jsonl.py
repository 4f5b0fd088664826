"""JSONL input: one record per non-blank line, read as a stream (a file of many GB never sits in memory).

A line that is not a JSON object, has no string `text`, nests its fields past `MAX_LEVELS`, or whose id
cannot be a key is still a record, with a `problem` that says why. Blank lines are not records.
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from formwork.schemas.walk import nested_deeper
from formwork.tasks.sources.keys import KeyBook, content_key
from formwork.tasks.sources.records import (
    MAX_LEVELS,
    InputRecord,
    SourceProblem,
    Warnings,
    clean_text,
    clean_value,
    decode,
    finished,
    joined,
)

_WIDE_BOMS = {
    "UTF-32": (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE),  # before UTF-16: FF FE 00 00 starts with FF FE
    "UTF-16": (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE),
}


def refuse_wide_encodings(path: Path) -> None:
    """Refuse a UTF-16/32 file (PowerShell's `>` writes one) before any write: read as UTF-8, every
    line would be garbage."""
    with path.open("rb") as handle:
        head = handle.read(4)
    for name, boms in _WIDE_BOMS.items():
        if head.startswith(boms):
            raise SourceProblem(
                f"{path}: the file is {name} (it starts with a byte-order mark); save it as UTF-8"
            )


def read_jsonl(path: Path, book: KeyBook) -> Iterator[InputRecord]:
    refuse_wide_encodings(path)
    return _records(path, book)


def _records(path: Path, book: KeyBook) -> Iterator[InputRecord]:
    with path.open("rb") as handle:
        number = 0
        for chunk in handle:  # split at b"\n"; splitlines() also honours a lone "\r", as before
            for raw in chunk.splitlines():
                number += 1
                raw = raw.removeprefix(codecs.BOM_UTF8)  # Windows tools write one; `cat` puts it mid-file
                if raw.strip():
                    yield _record(raw, number, book)


def own_id(value: Any) -> tuple[str | None, str | None]:
    """The id as a key (7, 7.0 and "7" are the same key), or the reason it cannot be one.

    Null and "" mean no id: the record is keyed by its line, never by the text "None".
    """
    if value is None or value == "":
        return None, None
    if isinstance(value, str):
        return value, None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), None
    if isinstance(value, float) and math.isfinite(value):
        return (str(int(value)) if value.is_integer() else repr(value)), None
    if isinstance(value, float):
        return None, f"the id {value} is not a finite number"
    return None, f"the id must be a string or a number, not {type(value).__name__}"


def _record(raw: bytes, number: int, book: KeyBook) -> InputRecord:
    where, fallback = f"line {number}", f"line-{number}"
    warnings = Warnings()
    line = decode(raw, warnings)
    try:
        fields = json.loads(line)
    except (ValueError, RecursionError) as exc:  # ValueError: an integer of over 4300 digits
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        key, _ = book.claim(None, fallback, where)
        return finished(InputRecord(key, line, {}, f"{where} is not valid JSON: {reason}"), where, warnings)
    if not isinstance(fields, dict):
        key, _ = book.claim(None, fallback, where)
        return finished(InputRecord(key, line, {}, f"{where} is not a JSON object"), where, warnings)
    if nested_deeper(fields, MAX_LEVELS):  # its fields would end a recursive walk: stored, failed, unread
        key, _ = book.claim(own_id(fields.get("id"))[0], fallback, where)
        problem = f"{where} nests its fields more than {MAX_LEVELS} levels deep; flatten them"
        return finished(InputRecord(key, line, {}, problem), where, warnings)

    wanted, id_problem = own_id(fields.get("id"))
    meta = clean_value({k: v for k, v in fields.items() if k not in ("id", "text")}, warnings)
    text, text_problem = fields.get("text"), None
    if not isinstance(text, str):
        text, text_problem = line, f"{where} has no string 'text'"
    elif "\\u" in line:  # the line is clean text: only a \u escape puts a surrogate or a NUL in a string
        text = clean_text(text, warnings)
    if wanted is None and id_problem is None:  # no id: keyed by its text, its place kept in meta
        fallback = content_key(text)
        meta.setdefault("line", number)
    key, key_problem = book.claim(wanted, fallback, where)
    problem = joined(f"{where}: {id_problem}" if id_problem else None, key_problem, text_problem)
    return finished(InputRecord(key, text, meta, problem), where, warnings)
