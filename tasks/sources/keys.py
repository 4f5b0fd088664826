"""Record keys that are unique in one input and storable in every database.

A key is what the operator matches results back with, so the input's own id is used whenever it can
be. When it cannot, the record still gets a key and says why in its `problem` (stored as a `failed`
result), so nothing is merged or dropped in silence:

- no id at all (a JSONL line without one, a CSV row with an empty or no id column): a hash of the
  text (`content_key`), the line or row number kept in the record's meta;
- an id already used by an earlier line: the later line is keyed by its position (`line-9`) and says
  which line had the id first (keeping the first is what makes rereading the same file stable);
- an id no database column holds (a lone surrogate, a NUL, more than 200 characters): a safe key made
  of its readable head and a hash of the whole id, so two different bad ids never share a key.
"""

from __future__ import annotations

import hashlib
import re

MAX_KEY_CHARS = 200  # records.key is String(200)
_SURROGATE = re.compile("[\ud800-\udfff]")


def why_unstorable(key: str, what: str = "id") -> str | None:
    """Why `key` cannot be stored as a key, or None when it can."""
    if _SURROGATE.search(key):
        if what == "file name":  # os.fsdecode turns bytes that are not UTF-8 into lone surrogates
            return "the file name is not valid UTF-8 (rename the file)"
        return f"the {what} is not valid Unicode (a lone surrogate)"
    if "\x00" in key:
        return f"the {what} contains a NUL character"
    if len(key) > MAX_KEY_CHARS:
        return f"the {what} has {len(key)} characters; a key holds at most {MAX_KEY_CHARS}"
    return None


def readable(key: str, limit: int = 150) -> str:
    """`key` as text that can be shown and stored: surrogates as U+FFFD, no NUL, cut at `limit`."""
    return _SURROGATE.sub("\ufffd", key).replace("\x00", "")[:limit]


def safe_key(key: str) -> str:
    """A storable key for `key`: its readable head and a hash of all of it (stable across reads)."""
    digest = hashlib.sha256(key.encode("utf-8", errors="surrogatepass")).hexdigest()[:12]
    return f"{readable(key)}~{digest}"


def content_key(text: str) -> str:
    """The key of a record that has no id: a hash of its text, so it keeps its key wherever it moves.

    A line number would shift when a line is inserted above, and every line after it would become a
    new record, extracted again: a paid call for an unchanged text.
    """
    return f"text-{hashlib.sha256(text.encode('utf-8', errors='surrogatepass')).hexdigest()[:16]}"


class KeyBook:
    """The keys handed out while reading one input, each with the place that got it first."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}

    def claim(
        self, wanted: str | None, fallback: str, where: str, what: str = "id"
    ) -> tuple[str, str | None]:
        """The key for the record at `where`, and the problem when its own id (`wanted`) cannot be it.

        `wanted` is None when the input gives no id; `fallback` (a position such as `line-9`) is then
        the key, made unique if an earlier id took it.
        """
        if wanted is None:
            return self._take(fallback, where), None
        why = why_unstorable(wanted, what)
        if why is not None:
            safe = safe_key(wanted)
            if safe in self._owner:  # the same bad id again
                return self._take(fallback, where), f"{where}: {why}; it collides with {self._owner[safe]}"
            return self._take(safe, where), f"{where}: {why}"
        if wanted in self._owner:
            first = self._owner[wanted]
            return self._take(
                fallback, where
            ), f"{where}: {what} {readable(wanted, 60)!r} collides with {first}"
        return self._take(wanted, where), None

    def _take(self, key: str, where: str) -> str:
        candidate, number = key, 1
        while candidate in self._owner:
            number += 1
            candidate = f"{key}~{number}"
        self._owner[candidate] = where
        return candidate
