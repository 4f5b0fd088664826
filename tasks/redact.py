"""Keep secrets out of everything Formwork writes: stored errors, logs, flow parameters, the CLI's output.

Two kinds of secret reach error messages: a password inside a URL (`postgresql://u:pw@db/x`,
`http://u:pw@gpu-1:8000/v1`, `…/x?password=pw`) or a DSN (`host=db password=pw`), and an API key
that Formwork itself sends. The first is recognised by shape, the second because the settings
register it here when they read it. Redaction happens at the boundaries (the store, the engines'
messages, the logs), so no caller has to remember it.
"""

from __future__ import annotations

import logging
import re
import threading

_URL_PASSWORD = re.compile(  # a password may hold `/`; it ends at the `@` before the host
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s:@]*):(?P<password>[^@\s]+)@"
)
# `?password=…` in a URL's query string, `password=…` in a libpq DSN (`host=db password='a b'`)
_KEYWORD_PASSWORD = re.compile(
    r"(?P<key>(?<![A-Za-z0-9_])(?:password|passwd)\s*=\s*)(?P<value>'(?:[^'\\]|\\.)*'|[^\s&;#']+)",
    re.IGNORECASE,
)
_secrets: tuple[str, ...] = ()  # longest first, so a secret inside another is masked as the longer one
_lock = threading.Lock()
MASK = "***"


def register_secret(value: str | None) -> None:
    """Remember a secret value (an API key) so that every later `redact` masks it."""
    global _secrets
    if value and len(value) >= 4:
        with _lock:
            _secrets = tuple(sorted({*_secrets, value}, key=len, reverse=True))


def redact(text: str) -> str:
    """`text` with URL passwords and registered secrets replaced by ***.

    Every string the store writes passes here (about 200 a record), so each pattern runs only where
    the characters it needs are present: a URL password needs "://", a keyword one "="."""
    if not text:
        return text
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
    if "=" in text:
        text = _KEYWORD_PASSWORD.sub(lambda m: f"{m['key']}{MASK}", text)
    for secret in _secrets:  # the tuple is replaced whole, never changed in place: no lock needed
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def install_log_redaction() -> None:
    """Redact every log record this process creates (Prefect's included), once, at its creation."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "formwork_redacts", False):
        return

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.args or isinstance(record.msg, str):
            record.msg, record.args = redact(record.getMessage()), None
        return record

    factory.formwork_redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
