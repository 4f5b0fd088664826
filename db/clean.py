"""Make any value storable on both databases, so one odd model output never aborts a chunk's commit.

PostgreSQL refuses a NUL character in text and JSON, and no driver can encode a lone surrogate as
UTF-8; a model (or an input id) produces either now and then, and with greedy decoding it produces it
again on every rerun. Such characters become U+FFFD here, for every string on its way into the database.

Secrets are redacted (see tasks.redact) only in what Formwork itself writes: error messages, stored
settings and source URLs (`clean_message`, `redacted`). The user's data (record texts, keys and meta,
model answers, values and their evidence) is stored as it came: a text that says `password=x` or holds
a URL's `user:pass@` is the text the model must read, the pages show and `results` exports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from formwork.tasks.redact import redact

REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """`text` without NUL or lone surrogates (each replaced by U+FFFD); nothing else changed."""
    if "\x00" in text:
        text = text.replace("\x00", REPLACEMENT)
    if not text.isascii() and not _encodes(text):  # ASCII holds no surrogate: most strings skip the copy
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def clean_message(text: str) -> str:
    """An error message, setting or URL Formwork stores: cleaned, and its secrets redacted."""
    return redact(clean_text(text))


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storable(value: Any) -> Any:
    """The user's data: every string in `value` (keys of dicts too) cleaned, never redacted."""
    return _each_string(value, clean_text)


def redacted(value: Any) -> Any:
    """Formwork's own words (errors, settings): every string in `value` cleaned and redacted."""
    return _each_string(value, clean_message)


def _each_string(value: Any, clean: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {_each_string(k, clean): _each_string(v, clean) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_each_string(v, clean) for v in value]
    return value
