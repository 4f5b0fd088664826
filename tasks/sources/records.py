"""The record every reader yields, and the cleaning that makes its text and meta storable anywhere.

PostgreSQL refuses NUL characters in text and JSONB and lone surrogates anywhere; invalid UTF-8 cannot
be stored as text at all. So every reader passes what it read through here: bad bytes become U+FFFD,
lone surrogates too, NULs are removed, and each change is a warning in the record's meta, never silent.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from formwork.tasks.prompts import MAX_SOURCE_CHARS, long_text_warning

INVALID_UTF8 = "invalid UTF-8 bytes were replaced with U+FFFD"
LONE_SURROGATES = "lone surrogates were replaced with U+FFFD"
NUL_REMOVED = "NUL bytes were removed"
_SURROGATE = re.compile("[\ud800-\udfff]")
# Levels of lists and objects a record's fields may nest: its meta is cleaned, stored and shown by
# recursive walks, and one line nested 600 deep stopped a run with a RecursionError, storing nothing.
MAX_LEVELS = 64


@dataclass
class InputRecord:
    """One input line, row, file or message: `problem` set means it is stored as a `failed` result."""

    key: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None


class SourceProblem(ValueError):
    """The input as a whole cannot be read (missing path, unknown format, no text column)."""


class Warnings(list[str]):
    """The cleaning notes of one record, each said once, in the order they happened."""

    def add(self, warning: str) -> None:
        if warning not in self:
            self.append(warning)


def decode(raw: bytes, warnings: Warnings) -> str:
    """UTF-8 text from bytes; bad bytes become U+FFFD (exactly when the strict decoder fails), NULs go."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        warnings.add(INVALID_UTF8)
    return clean_text(text, warnings)


def clean_text(text: str, warnings: Warnings) -> str:
    """Text any database stores: lone surrogates (from JSON escapes or file names) and NULs replaced."""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
        warnings.add(LONE_SURROGATES)
    if "\x00" in text:
        text = text.replace("\x00", "")
        warnings.add(NUL_REMOVED)
    return text


def clean_value(value: Any, warnings: Warnings) -> Any:
    """A JSON value PostgreSQL's JSONB accepts: strings cleaned, NaN and infinities as strings."""
    if isinstance(value, str):
        return clean_text(value, warnings)
    if isinstance(value, float) and not math.isfinite(value):
        warnings.add(f"the number {value} was stored as text")
        return str(value)
    if isinstance(value, list):
        return [clean_value(item, warnings) for item in value]
    if isinstance(value, dict):
        return {clean_text(str(k), warnings): clean_value(v, warnings) for k, v in value.items()}
    return value


def joined(*problems: str | None) -> str | None:
    """One problem text from all that were found (None when there was none)."""
    return "; ".join(p for p in problems if p) or None


def finished(record: InputRecord, where: str, warnings: Warnings) -> InputRecord:
    """The record with its warnings in the meta, and what the model cannot use flagged.

    An empty text is a problem (nothing to extract); a text longer than a prompt takes is kept whole
    with a warning that it is read in parts (or cut).
    """
    if record.problem is None and not record.text.strip():
        record.problem = f"{where}: the text is empty"
    elif record.problem is None and len(record.text) > MAX_SOURCE_CHARS:
        warnings.add(long_text_warning(len(record.text)))
    if warnings:
        record.meta["warnings"] = list(warnings)
    return record
