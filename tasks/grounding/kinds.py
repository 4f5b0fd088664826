"""Which spans can be a name or an address by what they are: a person's name has no title or legal
form, no two things joined by a separator are one name, no website is a person's or a company's name
where the text spells that name out, a company the text's own web domain names is the name it spells
(tasks.grounding.sites), and an address laid out in lines is whole lines that do not stop at a comma
the next line goes on from.

The 1.5B, asked for a contact's name, took "Dr. Ramón Ortiz" and "Berger Elektro GmbH"; asked for the
organization, "Super Place - superplace.com", "Serrurier - Witmark" (a locksmith at Witmark) and
"miningoperator.fr" where the signature also wrote "Super Place" and "Mining Operator"; asked for a
receipt's address, "JALAN AIR PANAS" of "NO 290, JALAN AIR PANAS, SETAPAK, 53200, KUALA LUMPUR.".
Each was offered as a span like any other. Gold sets and people write a name without its title, a
company is no person, a line that joins a role, a name or a website with a separator is none of
them whole, a website names a company only where the text writes no other name for it, and a receipt
or a letterhead prints an address as whole lines, so these spans are not offered to such fields (the
name inside them is, on its own: "Ramón Ortiz", "Witmark"). A company field keeps its legal form
("MR. D.I.Y. SDN BHD") and a name that holds a domain without a separator ("ECOSWAY.COM SDN BHD");
an address in a sentence keeps its words. Of 46 receipt addresses the 1.5B read wrong at r8, 20 stopped
at a line ending with a comma ("67,JLN MEWAH 25/63 TMN SRI MUDA," above "40400 SHAH ALAM."); every gold
address that ends with a comma is followed by a labelled line ("TEL: 03-...", "PHONE:"). At r9 most
of the 41 still wrong began a line late (below a line ending with a comma) or stopped above the line
with the postcode.
"""

from __future__ import annotations

from collections.abc import Iterable

import regex

from formwork.tasks.grounding.capitals import uncapitalised, writes_capitals
from formwork.tasks.grounding.cues import (
    cues_for,
    labelled,
    names_a_company,
    names_a_person,
    names_an_address,
)
from formwork.tasks.grounding.sites import named_by_site, spelled_out, website
from formwork.tasks.grounding.spans import line_runs

# Words written before a person's name that are no part of it ("Dr. Ramón Ortiz", "Ms. Aigerim
# Nurlanovna", "Professor Olumide Adeyemi"), as written with or without their dot; "M." is left out
# (an initial as often as "Monsieur").
HONORIFICS = frozenset(("mr", "mrs", "ms", "miss", "mx", "dr", "dra", "prof", "professor", "sir", "dame",
                        "herr", "frau", "hr", "fr", "mme", "mlle", "monsieur", "madame", "mademoiselle",
                        "sr", "sra", "srta", "señor", "señora", "dott", "dottssa", "sig", "sigra", "dhr",
                        "mevr", "pan", "pani"))  # fmt: skip
# A company's legal form as its last word ("Berger Elektro GmbH", "FastShip Inc.", "Nordlys Energi AS").
LEGAL_FORMS = frozenset(("gmbh", "inc", "ltd", "llc", "llp", "plc", "corp", "bhd", "pty", "pte", "sarl",
                         "srl", "sprl", "ohg", "oyj", "aps", "gbr", "limited", "incorporated"))  # fmt: skip
# Legal forms that are also short words or surnames ("Sa", "As"): only as written, in capitals or dotted.
CAPITAL_FORMS = frozenset(("ag", "kg", "ug", "se", "as", "asa", "ab", "oy", "sa", "sas", "sl", "slu", "bv",
                           "nv", "kk", "lda", "spa", "sro"))  # fmt: skip
SEPARATORS = frozenset(("-", "/", "|", "–", "—", "·", "•"))
LAID_OUT, SHORT_LINE = 5, 6  # lines, and words a short line holds at most
POSTCODE = regex.compile(r"(?<![\d./-])\d{5}(?![\d./-])")  # "53100 KUALA LUMPUR", "TAMPOI,81200 JOHOR"
LABEL_LINE = regex.compile(r"^[^:\n]{0,24}:")  # "TEL: 03-...", "GST NO.: 0016...", "PHONE:"


def titled(span: str) -> bool:
    """The span begins with an honorific ("Dr. Elif Yılmaz"): the name is what follows it, which is
    offered on its own, as people and gold sets write a name."""
    first = span.split(maxsplit=1)[0] if span.strip() else ""
    return first.casefold().replace(".", "") in HONORIFICS


def incorporated(span: str) -> bool:
    """The span ends with a company's legal form ("Berger Elektro GmbH", "ACME S.A."): a company."""
    words = span.split()
    if len(words) < 2:
        return False
    last = words[-1].strip(",")
    bare = last.casefold().replace(".", "")
    return bare in LEGAL_FORMS or (bare in CAPITAL_FORMS and (last.isupper() or "." in last))


def joined(span: str) -> bool:
    """Two things a separator between spaces joins ("Serrurier - Witmark": a role and a company;
    "Rainbow Records / rainbowrecords.com": a name and its website): each is offered on its own."""
    return any(word in SEPARATORS for word in span.split())


def laid_out_in_lines(text: str) -> bool:
    """The text lays each thing on a line of its own (a receipt, a letterhead: at least LAID_OUT lines,
    most of them short), where an address is whole lines; in prose it is part of a sentence."""
    words = sorted(len(line.split()) for line in text.splitlines() if line.strip())
    return len(words) >= LAID_OUT and words[len(words) // 2] <= SHORT_LINE


def continued(lines: str, text: str) -> bool:
    """The address goes on past these lines: they begin below a line that ends with a comma ("TAMAN
    BERKELEY" below "LOT P.T. 2811, JALAN ANGSA,"), or the next line, no labelled line of its own,
    goes on from them, as after a comma ("TAMAN MELATI," above "53100 KUALA LUMPUR."; above "TEL:
    03-4021 5566" it may end) or with the postcode that lines without one still lack."""
    at = text.find(lines)
    if at < 0:
        return False
    before = text[:at].rsplit("\n", 2)
    if len(before) > 1 and not before[-1].strip() and before[-2].rstrip().endswith(","):
        return True
    rest = text[at + len(lines) :].split("\n", 2)
    following = rest[1] if len(rest) > 1 and not rest[0].strip() else ""
    if not following.strip() or LABEL_LINE.match(following):
        return False
    postcode = POSTCODE.search(following) is not None and POSTCODE.search(lines) is None
    return lines.rstrip().endswith(",") or postcode


def fitting(spans: Iterable[str], text: str, described: str, name: str) -> Iterable[str]:
    """The spans a field (its description and name) can take by what they are, lazily, in order."""
    cues = cues_for(described, name)
    spans = (s for s in spans if not labelled(s, cues))  # "Tulp", not "project Tulp"
    person = names_a_person(described, name)
    if person:
        spans = (s for s in spans if not titled(s) and not incorporated(s))
        if writes_capitals(text):
            spans = (s for s in spans if not uncapitalised(s))  # tasks.grounding.capitals
    if names_an_address(described, name) and laid_out_in_lines(text):
        spans = (s for s in spans if s in line_runs(text) and not continued(s, text))  # whole lines
    if person or names_a_company(described, name):
        spans = (s for s in spans if not joined(s) and not (website(s) and spelled_out(s, text)))
    if names_a_company(described, name):
        spans = named_by_site(spans, text)
    return spans
