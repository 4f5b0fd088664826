"""Read input records from JSONL, CSV or a folder of .txt/.eml files, losing nothing.

A bad line is not skipped and does not stop the run: it becomes a record with a `problem`, stored and
given a `failed` result with that reason, so the summary and the results table show it. Invalid UTF-8
is replaced (U+FFFD) and NUL bytes removed (PostgreSQL cannot store them), each with a warning in the
record's meta.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.prompts import MAX_SOURCE_CHARS

TEXT_SUFFIXES = {".txt", ".eml"}


@dataclass
class InputRecord:
    key: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None


class SourceProblem(ValueError):
    """The input as a whole cannot be read (missing path, unknown format, no text column)."""


def _clean(raw: bytes, meta: dict[str, Any]) -> str:
    text = raw.decode("utf-8", errors="replace")
    warnings = []
    if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
        warnings.append("invalid UTF-8 bytes were replaced with U+FFFD")
    if "\x00" in text:
        text = text.replace("\x00", "")
        warnings.append("NUL bytes were removed")
    if warnings:
        meta.setdefault("warnings", []).extend(warnings)
    return text


def _checked(record: InputRecord, where: str) -> InputRecord:
    """Flag what the model cannot use: an empty text (failed), a text longer than a prompt takes (cut)."""
    if not record.text.strip():
        record.problem = record.problem or f"{where}: the text is empty"
    elif len(record.text) > MAX_SOURCE_CHARS:
        warning = f"the text has {len(record.text)} characters; the model sees the first {MAX_SOURCE_CHARS}"
        record.meta.setdefault("warnings", []).append(warning)
    return record


def _from_fields(key: str, fields: dict[str, Any], where: str, found: dict[str, Any]) -> InputRecord:
    """A record from parsed fields; `found` holds what reading the raw line already noted (warnings)."""
    meta = {**{k: v for k, v in fields.items() if k not in ("id", "text")}, **found}
    meta["warnings"] = list(found.get("warnings", []))
    text = fields.get("text")
    if not isinstance(text, str):
        return InputRecord(key, json.dumps(fields, ensure_ascii=False), meta, f"{where} has no string 'text'")
    record = _checked(
        InputRecord(key, _clean(text.encode("utf-8", errors="surrogatepass"), meta), meta), where
    )
    if not record.meta["warnings"]:
        del record.meta["warnings"]
    return record


def _read_jsonl(path: Path) -> Iterator[InputRecord]:
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        if not raw.strip():
            continue
        meta: dict[str, Any] = {}
        line = _clean(raw, meta)
        try:
            fields = json.loads(line)
        except json.JSONDecodeError as exc:
            yield InputRecord(f"line-{number}", line, meta, f"line {number} is not valid JSON: {exc.msg}")
            continue
        if not isinstance(fields, dict):
            yield InputRecord(f"line-{number}", line, meta, f"line {number} is not a JSON object")
            continue
        yield _from_fields(str(fields.get("id", f"line-{number}")), fields, f"line {number}", meta)


def _read_csv(path: Path) -> Iterator[InputRecord]:
    """Check the header now (a missing column refuses the run before any write), yield rows later."""
    meta: dict[str, Any] = {}
    reader = csv.DictReader(io.StringIO(_clean(path.read_bytes(), meta)))
    if "text" not in (reader.fieldnames or []):
        raise SourceProblem(f"{path}: a CSV input needs a 'text' column (found: {reader.fieldnames})")

    def rows() -> Iterator[InputRecord]:
        for number, row in enumerate(reader, start=2):
            yield _from_fields(str(row.get("id") or f"row-{number}"), dict(row), f"row {number}", meta)

    return rows()


def _read_folder(path: Path) -> Iterator[InputRecord]:
    for file in sorted(p for p in path.rglob("*") if p.suffix.lower() in TEXT_SUFFIXES):
        meta: dict[str, Any] = {"file": str(file.relative_to(path))}
        text = _clean(file.read_bytes(), meta)
        key = str(file.relative_to(path))
        yield _checked(InputRecord(key, text, meta), key)


def read_records(source: str | Path) -> Iterator[InputRecord]:
    """Yield every record of `source`; raise SourceProblem if the source as a whole is unusable."""
    path = Path(source)
    if path.is_dir():
        return _read_folder(path)
    if not path.is_file():
        raise SourceProblem(f"input {str(source)!r} does not exist")
    readers = {".jsonl": _read_jsonl, ".ndjson": _read_jsonl, ".csv": _read_csv}
    if path.suffix.lower() not in readers:
        raise SourceProblem(f"{path}: unknown input format; use .jsonl, .csv or a folder of .txt files")
    return readers[path.suffix.lower()](path)
