"""What a text's web addresses say of the names in it: a website is no company's name where the text
spells that name out, and where a line writes the name the text's own e-mail or web domain spells,
that line is the company.

JDR signatures (calibration half) wrote "Serrurier - Witmark" above "witmark.com", "Saturday Matinee"
beside "ernestbizier@saturdaymat.com", "Jasmin et Lilas" beside "jasmin-lilas.com"; the 1.5B took the
role ("Serrurier"), a city, another line or null for the company, or the website itself. A domain
names its owner in most signatures and receipts that print one; a webmail's (gmail.com) names nobody
in the text and holds nothing, and a quoted message ("> ...") is another writer's, whose company it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache

import regex

from formwork.tasks.grounding.evidence import fold
from formwork.tasks.grounding.spans import EMAIL

WEBSITE = regex.compile(r"(?:https?://)?(?:www\.)?((?:[\p{L}\p{N}][\p{L}\p{N}-]*\.)+)(\p{L}{2,})(?:/\S*)?")
SITE_NAME = 4  # letters a domain's name holds at least for a company field to be held to it
HYPHEN_WORD = 4  # letters a hyphen of a website may stand for in its name ("et", "and", "und")
LETTERS = regex.compile(r"[^\p{L}\p{N}]+")


def website(span: str) -> bool:
    """The span is a web address alone, its ending in lower case ("miningoperator.fr",
    "www.superplace.com/contact"; not "SUPER.SEVEN", a shop's name in capitals)."""
    found = WEBSITE.fullmatch(span.strip())
    return found is not None and found.group(2).islower()


def _folded(written: str) -> str:
    """Its letters and digits only, folded as the judge folds them (evidence.fold: case, and a Latin
    letter's accents): "Cité des Anges" -> "citedesanges"."""
    return LETTERS.sub("", fold(written)[0])


@lru_cache(maxsize=64)
def _words_of(text: str) -> str:
    """The text's letters without its e-mails and web addresses, each line apart."""
    lines = (WEBSITE.sub(" ", EMAIL.sub(" ", line)) for line in text.splitlines())
    return "\n".join(_folded(line) for line in lines)


def _spelling(label: str, shortest: int) -> regex.Pattern[str] | None:
    """How a name a domain's label spells is written, folded: its hyphen may stand for a short word
    ("Jasmin et Lilas" for "jasmin-lilas"); None where the label holds fewer than `shortest` letters."""
    pieces = [piece for piece in (_folded(part) for part in label.split("-")) if piece]
    if sum(map(len, pieces)) < shortest:
        return None
    return regex.compile(f".{{0,{HYPHEN_WORD}}}".join(regex.escape(piece) for piece in pieces))


def spelled_out(site: str, text: str) -> bool:
    """The text writes the name a website spells ("Mining Operator" for "miningoperator.fr",
    "Clinique Gemco" for "gemco.com"), outside any e-mail or web address."""
    found = WEBSITE.fullmatch(site.strip())
    spelling = _spelling(found.group(1), 3) if found else None
    return spelling is not None and spelling.search(_words_of(text)) is not None


def _name_label(host: str) -> str:
    """The label of a web domain that names its owner: "witmark" of "witmark.com", "tealive" of
    "www.tealive.com.my", "jasmin-lilas" of "shop.jasmin-lilas.fr"."""
    labels = [label for label in host.casefold().split(".") if label][:-1]
    while len(labels) > 1 and len(labels[-1]) <= 3:  # "com" of ".com.my", "co" of ".co.uk"
        labels.pop()
    return labels[-1] if labels else ""


@lru_cache(maxsize=64)
def _site_names(text: str) -> tuple[regex.Pattern[str], ...]:
    """How the names the text's own web domains (of its e-mails and web addresses) spell are written;
    none for a domain that names nobody in the text (gmail.com)."""
    hosts = [found.group(0).rsplit("@", 1)[1] for found in EMAIL.finditer(text)]
    hosts += [f"{m.group(1)}{m.group(2)}" for m in _web_addresses(EMAIL.sub(" ", text))]
    spellings = {_spelling(_name_label(host), SITE_NAME) for host in hosts}
    return tuple(spelling for spelling in spellings if spelling is not None)


def named_by_site(spans: Iterable[str], text: str) -> Iterable[str]:
    """Where the text writes a name its own web domain spells ("Witmark" beside witmark.com, "Saturday
    Matinee" beside saturdaymat.com), a company field is offered only the spans that write it: the
    1.5B took the role ("Serrurier"), a city or another line beside it."""
    spellings = _site_names(text)
    if not spellings:
        return spans
    spans, own = list(spans), _unquoted(text)
    named = [s for s in spans if s in own and not _holds_address(s) and _spelled_in(s, spellings)]
    return named or spans


def _holds_address(span: str) -> bool:
    """The span holds an e-mail or a web address, which spells its domain's name but does not write it."""
    return EMAIL.search(span) is not None or any(_web_addresses(span))


def _web_addresses(written: str) -> Iterator[regex.Match[str]]:
    """The web addresses written in it, their ending in lower case as `website` asks."""
    return (found for found in WEBSITE.finditer(written) if found.group(2).islower())


@lru_cache(maxsize=64)
def _unquoted(text: str) -> str:
    """The text without the lines it quotes ("> Piotr Mazur, Mazur Deweloper Sp. k."): a quoted
    message's company is its writer's, so a name written only there holds no field to it."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(">"))


def _spelled_in(span: str, spellings: tuple[regex.Pattern[str], ...]) -> bool:
    folded = _folded(span)
    return any(spelling.search(folded) for spelling in spellings)
