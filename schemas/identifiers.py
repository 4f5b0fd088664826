"""Which string fields identify something, and how such values are compared: exactly, after normalising.

A fuzzy compare made tim@acme.com right for tom@acme.com, in calibration and in audits alike. A field
is an identifier by its schema node (`format` email, uri or url; a `pattern` admitting only digits and
separators) or by the last word of its name (`phone_number`, `contactEmail`, `order_id`, `iban`), so
`order_notes`, `email_subject` and `account_holder` stay free text. Each kind has its normal form
(`IDENTIFIERS`): e-mails case-folded without `mailto:`, URLs with scheme and host in lower case, phones
as their digits (`00` as `+`, `+44 (0)20` without the bracketed trunk 0), codes without spaces, dashes
or dots. tasks.evaluation.scoring names the rules and compares.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

# a field's name says it holds an identifier when its last word is one of these (a plural too):
# `phone`, `home_phone`, `phone_number`; `email`, `email_address`; `website`; `order_id`, `iban`.
# The last word decides, so `order_notes`, `email_subject` and `account_holder` stay free text.
PHONE_WORDS = frozenset({"phone", "telephone", "tel", "fax", "mobile", "cell", "cellphone", "gsm", "telefon",
                         "telefono", "telefone", "telephon"})  # fmt: skip
EMAIL, MAIL = frozenset({"email"}), frozenset({"mail"})
EMAIL_LAST = frozenset({"email", "mail", "address", "addr"})  # after "email" or "e mail" in the name
URL_WORDS = frozenset({"url", "uri", "website", "homepage", "link", "href"})
CODE_WORDS = frozenset({"number", "num", "no", "nr", "id", "uuid", "guid", "iban", "bic", "swift", "sku",
                        "isbn", "ean", "upc", "gtin", "ref", "reference", "account", "code", "zip",
                        "postcode", "vat"})  # fmt: skip
FORMATS = {"email": "email", "idn-email": "email", "uri": "url", "iri": "url", "url": "url",
           "uri-reference": "url", "iri-reference": "url", "phone": "digits", "tel": "digits"}  # fmt: skip


def _words(name: str) -> list[str]:
    """The words of a field's own name (the last key of a path like `contacts[0].phoneNumber`)."""
    keys = [part for part in re.split(r"[.\[\]]+", name) if part and not part.isdigit()]
    last = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", keys[-1]) if keys else ""
    return [word.lower() for word in re.split(r"[^A-Za-z0-9]+", last) if word]


def _is(word: str, vocabulary: frozenset[str]) -> bool:
    return word in vocabulary or (word.endswith("s") and word[:-1] in vocabulary)


def _digit_pattern(pattern: str) -> bool:
    """Whether a `pattern` admits only digits and separators: no letter, no `.` wildcard, no `\\w`, no
    negated class (`^\\+?[0-9(][0-9 ().\\-]{3,30}[0-9]$` does; `^[A-Z]{2}\\d+$` and `^\\d.+$` do not)."""
    if not re.search(r"\\d|0-9", pattern) or "[^" in pattern:
        return False
    bare = re.sub(r"\\d|0-9|\\s|\{\d+(,\d*)?\}|\\[^A-Za-z]", "", pattern)  # digits, spaces, counts, \-
    inside = "".join(re.findall(r"\[[^\]]*\]", bare))  # in a class a `.` is a dot
    outside = re.sub(r"\[[^\]]*\]", "", bare)
    return not re.search(r"[A-Za-z\\]", inside) and not re.search(r"[A-Za-z.\\]", outside)


def identifier_rule(node: dict[str, Any], name: str | None) -> str | None:
    """The exact rule for a string field that identifies something (see the module's docstring), or
    None for free text."""
    kind = FORMATS.get(str(node.get("format") or node.get("x-format") or ""))
    if kind:
        return kind
    words = _words(name) if name else []
    last = words[-1] if words else ""
    said_email = any(_is(w, EMAIL) for w in words) or any(
        first == "e" and _is(then, MAIL) for first, then in itertools.pairwise(words)
    )
    if said_email and _is(last, EMAIL_LAST):
        return "email"
    if any(_is(w, PHONE_WORDS) or w.endswith("phone") for w in words) and (
        _is(last, PHONE_WORDS) or last.endswith("phone") or last in ("number", "num", "no", "nr")
    ):
        return "digits"
    if _is(last, URL_WORDS) or (last in ("address", "site") and any(w in ("web", "url") for w in words)):
        return "url"
    if _is(last, CODE_WORDS):
        return "code"
    if isinstance(node.get("pattern"), str) and _digit_pattern(node["pattern"]):
        return "digits"
    return None


def _email(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).strip().casefold()
    return text.removeprefix("mailto:").strip()


def _url(text: str) -> tuple[str, ...]:
    parts = urlsplit(unicodedata.normalize("NFKC", text).strip())
    path = "" if parts.path == "/" else parts.path
    return parts.scheme.lower(), parts.netloc.lower(), path, parts.query, parts.fragment


def _digits(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).strip()
    text = re.sub(r"^(?:\+|00)\s*(\d{1,3})[\s.-]*\(0\)", r"+\1", text)  # +44 (0)20: no trunk 0 dialled
    return re.sub(r"\D", "", re.sub(r"^00", "+", text))


def _code(text: str) -> str:
    return re.sub(r"[\s.\-\u2010-\u2015]+", "", unicodedata.normalize("NFKC", text).casefold())


IDENTIFIERS: dict[str, Callable[[str], Any]] = {
    "email": _email,
    "url": _url,
    "digits": _digits,
    "code": _code,
}
