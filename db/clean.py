"""Make any value storable on both databases, so one odd model output never aborts a chunk's commit.

PostgreSQL refuses a NUL character in text and JSON, and no driver can encode a lone surrogate as
UTF-8; a model (or an input id) produces either now and then, and with greedy decoding it produces it
again on every rerun. Such characters become U+FFFD here, and secrets are redacted (see tasks.redact),
for every string on its way into the database.
"""

from __future__ import annotations

from typing import Any

from formwork.tasks.redact import redact

REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """`text` without NUL or lone surrogates (each replaced by U+FFFD), secrets redacted."""
    if "\x00" in text:
        text = text.replace("\x00", REPLACEMENT)
    if not text.isascii() and not _encodes(text):  # ASCII holds no surrogate: most strings skip the copy
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        text = text.encode("utf-8", "replace").decode("utf-8")
    return redact(text)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storable(value: Any) -> Any:
    """`value` with every string in it (keys of dicts too) made storable; other values as they are."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable(v) for v in value]
    return value
