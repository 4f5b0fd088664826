"""Mail input: an .eml file is one message, an .mbox file many; each message is one record.

The standard library's `email` package (policy `default`) parses the message: the text/plain part, or
the text/html part turned into text, decoded to Unicode, is what the model reads, below the From, To,
Date and Subject lines (a contact's name and address are often only in From, and grounding looks for
values in the text); those headers and the Message-ID also go into the meta, and the Date header's
day becomes the record's `reference_date`, against which "yesterday" in the body is read, unless it
is a day no mail was sent on (more than a day in the future, or before 1980: a reset clock, a broken
or forged header): then the record has no reference date, its meta's `reference_date_refused` says
why, and so does a warning. A message without a text part is a record with a problem.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import re
from collections.abc import Iterator
from datetime import date
from email.message import EmailMessage
from html.parser import HTMLParser
from typing import IO, Any

from formwork.tasks.grounding.anchors import unlikely_reference
from formwork.tasks.sources.records import InputRecord, Warnings, clean_text, decode, finished, joined

HEADERS = {"from": "From", "to": "To", "date": "Date", "subject": "Subject", "message_id": "Message-ID"}
_QUOTED_FROM = re.compile(rb">+From ")  # mboxrd: ">From " in a body is stored as ">>From "


def message_record(
    raw: bytes, key: str, where: str, meta: dict[str, Any], problem: str | None
) -> InputRecord:
    """The record of one message; `problem` is one found before parsing (for example in the key)."""
    warnings = Warnings()
    try:
        message = email.message_from_bytes(raw, policy=email.policy.default)
        headers = _headers(message, warnings)
        meta.update(headers)
        sent = _sent_day(message)
        refused = unlikely_reference(sent) if sent else None
        if refused:
            meta["reference_date_refused"] = f"Date header: {refused}; not a reference date"
            warnings.add(meta["reference_date_refused"])
        elif sent:
            meta.setdefault("reference_date", sent.isoformat())  # "yesterday" in the body is read against it
        text, why = _body(message, warnings)
        shown = [f"{HEADERS[k]}: {headers[k]}" for k in ("from", "to", "date", "subject") if headers.get(k)]
        if text and shown:
            text = "\n".join(shown) + "\n\n" + text
        if message.defects:
            warnings.add("the message has defects: " + ", ".join(type(d).__name__ for d in message.defects))
    except Exception as exc:  # the email package has raised on hostile input; the message fails alone
        text, why = decode(raw, warnings), f"the message cannot be parsed: {type(exc).__name__}: {exc}"
    return finished(
        InputRecord(key, text, meta, joined(problem, f"{where}: {why}" if why else None)), where, warnings
    )


def _headers(message: EmailMessage, warnings: Warnings) -> dict[str, str]:
    raw = {name.lower(): value for name, value in message.raw_items()}
    found = {}
    for field, name in HEADERS.items():
        if name.lower() not in raw:
            continue
        try:
            value = str(message[name])
        except Exception:  # a header the parser chokes on: keep it as written
            value = str(raw[name.lower()])
        found[field] = clean_text(value, warnings)
    return found


def _sent_day(message: EmailMessage) -> date | None:
    """The day of the Date header (in the sender's own time zone), or None if absent or bad."""
    try:
        when = email.utils.parsedate_to_datetime(str(message["Date"])) if message["Date"] else None
    except (TypeError, ValueError, IndexError):
        return None
    return when.date() if when else None


def _body(message: EmailMessage, warnings: Warnings) -> tuple[str, str | None]:
    """The text of the best text part and None, or an empty text and why there is none."""
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return "", "the message has no text/plain or text/html part"
    try:
        content = part.get_content()
    except LookupError:  # a charset Python does not know
        warnings.add(f"unknown charset {part.get_content_charset()!r}; the body was read as UTF-8")
        content = decode(part.get_payload(decode=True) or b"", warnings)
    if part.get_content_subtype() == "html":
        content = html_to_text(content)
    return clean_text(content, warnings), None


def split_mbox(handle: IO[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Each message of an mbox as bytes, and whether it began with a `From ` line.

    A `From ` line starts a message only after a blank line (or at the top), so an unquoted "From "
    in a body does not split it; text before the first `From ` line comes first, flagged False.
    Reads one message at a time.
    """
    body: list[bytes] = []
    framed, after_blank = False, True
    for line in handle:
        if line.startswith(b"From ") and after_blank:
            if framed or any(part.strip() for part in body):
                yield _joined(body), framed
            body, framed = [], True
        else:
            body.append(line[1:] if _QUOTED_FROM.match(line) else line)
        after_blank = not line.strip()
    if framed or any(part.strip() for part in body):
        yield _joined(body), framed


def _joined(body: list[bytes]) -> bytes:
    """The message without the blank line that separates it from the next one."""
    if body and not body[-1].strip():
        body = body[:-1]
    return b"".join(body)


class _HtmlText(HTMLParser):
    """The visible text of an HTML body: no scripts, styles or head; a line break at each block."""

    SKIP = frozenset({"script", "style", "head", "template", "noscript"})
    BLOCK = frozenset(
        {"br", "p", "div", "li", "tr", "table", "ul", "ol", "blockquote", "pre", "hr", "section", "article",
         "header", "footer", "h1", "h2", "h3", "h4", "h5", "h6"}
    )  # fmt: skip

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self._skipping += 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
