"""The words after which a text writes a field's value, in the languages people write expenses and mail in.

"paid by Maria", "Projekt Falke", "项目：星河", "결제자 이서연", "Regards,\nJane Morrison": the span after
such a word is what people answer. A field says which cues are its own by the words of its name and
description ("The person who spent the money" names a person, "The project or client the expense is
billed to" a project and a client). They serve twice: the spans after a field's cues are offered
first under grounded decoding (tasks.grounding.spans), and of two sibling fields that wrote the same
words, the one whose cue the text writes before them keeps them (tasks.grounding.copies): 星河 after
项目 is the project, not the person, whichever field the schema lists first.

Cues in scripts written without spaces (Chinese, Japanese, Korean) are matched without word bounds:
"记在项目天穹" writes the cue inside a run of characters.
"""

from __future__ import annotations

from functools import lru_cache

import regex

SIGNED = ("regards", "best", "thanks", "cheers", "sincerely", "grüßen", "grüße", "gruß", "cordialement",
          "saludo", "saludos", "saluti", "cumprimentos", "groeten", "pozdrawiam", "此致", "敬具")  # fmt: skip
SENT_BY = ("from", "差出人", "送信者", "发件人", "寄件人", "보낸 사람", "보낸사람")  # a mail's sender
PAID_BY = ("paid by", "by", "bezahlt von", "von", "payé par", "par", "pagado por", "pagó", "pago por",
           "ha pagato", "pagato da", "betaald door", "door", "zapłacił", "płacił", "付款人", "报销人",
           "결제자", "traveller", "traveler", "guest", "attendee", "reisende", "gast", "ospite",
           "hóspede", "huésped")  # fmt: skip
NAMED = ("name", "nom", "nombre", "nome", "naam", "imię", "姓名", "氏名", "이름")
PROJECT = ("project", "proj", "projekt", "projet", "proyecto", "progetto", "projeto", "项目", "プロジェクト",
           "프로젝트", "案件", "cost center", "bill to", "charged to", "for")  # fmt: skip
CLIENT = ("client", "customer", "kunde", "cliente", "klant", "klient", "客户", "顧客", "客先", "고객", "for")
COMPANY = ("company", "organization", "organisation", "firma", "société", "empresa", "società", "bedrijf",
           "公司", "会社", "회사", "at")  # fmt: skip

# A word of a field's name or description, and the cues of the values it names.
CUES = {
    "person": (*PAID_BY, *SENT_BY, *SIGNED, *NAMED),
    "payer": PAID_BY,
    "name": (*SIGNED, *NAMED, *SENT_BY),
    "project": PROJECT,
    "client": CLIENT,
    "customer": CLIENT,
    "company": (*SIGNED, *COMPANY),
    "organization": (*SIGNED, *COMPANY),
    "organisation": (*SIGNED, *COMPANY),
}
LABELS = frozenset((*PROJECT, *CLIENT))  # words that name what follows them, never part of it
PEOPLE = frozenset(("person", "payer"))  # words that name a person (a name field may name a product)
COMPANIES = frozenset(("company", "organization", "organisation", "firm", "business", "employer", "merchant",
                       "vendor", "shop", "store"))  # fmt: skip
# Words that name something else: "The company or organization the person works for" names a company.
THINGS = COMPANIES | frozenset(("project", "client", "customer", "role", "title", "address", "website",
                                "email", "phone", "product"))  # fmt: skip
SIGN_OFFS = frozenset(SIGNED)  # the name is on the next line
UNSPACED = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")
FIELD_WORDS = regex.compile(r"[\p{L}\p{N}]+")


@lru_cache(maxsize=256)
def cues_for(description: str, name: str = "") -> tuple[str, ...]:
    """The cue words of a field whose name or description names a person, a project, a client or a
    company; () for any other field (read once per field, not once per value the judge weighs)."""
    words = {w.casefold() for w in FIELD_WORDS.findall(f"{name} {description}", concurrent=False)}
    return tuple(dict.fromkeys(cue for key, cues in CUES.items() if key in words for cue in cues))


@lru_cache(maxsize=256)
def names_a_person(description: str, name: str = "") -> bool:
    """The field holds a person: the first word of its name and description that names a kind of
    thing names a person ("The person who spent the money", "The name of the person speaking"; not
    "The company or organization the person works for")."""
    return _first_kind(description, name) in PEOPLE


@lru_cache(maxsize=256)
def names_a_company(description: str, name: str = "") -> bool:
    """The field holds a company: the first word of its name and description that names a kind of
    thing names a company ("The company or organization the person works for", `merchant`)."""
    return _first_kind(description, name) in COMPANIES


@lru_cache(maxsize=256)
def names_an_address(description: str, name: str = "") -> bool:
    """The field holds a postal address ("The issuing shop's whole postal address")."""
    return _first_kind(description, name) == "address"


def _first_kind(description: str, name: str) -> str:
    """The first word of the field's name and description that names a kind of thing ("" if none)."""
    for word in FIELD_WORDS.findall(f"{name} {description}", concurrent=False):
        if (folded := word.casefold()) in PEOPLE or folded in THINGS:
            return folded
    return ""


def labelled(span: str, cues: tuple[str, ...]) -> bool:
    """The span begins or ends with one of the field's cues that labels a value ("project Tulp",
    "Kiwi project", "client HDFC"): the value is what the label names, which is offered on its own.
    A company's cues are no such label: "Firma Müller", "Société Générale" are names."""
    labels = [cue for cue in cues if cue in LABELS]
    if not labels:  # most fields: nothing to fold for each of their spans
        return False
    folded = " ".join(span.casefold().split())
    return any(folded == cue or folded.startswith(f"{cue} ") or folded.endswith(f" {cue}") for cue in labels)


@lru_cache(maxsize=256)
def cue_pattern(cue: str) -> regex.Pattern[str]:
    """The cue as a whole word where its script spaces words ("by", not the "by" of "Abby"), as
    written anywhere where it does not."""
    if UNSPACED.match(cue):
        return regex.compile(regex.escape(cue))
    return regex.compile(rf"(?i)(?<![\p{{L}}\p{{N}}]){regex.escape(cue)}(?![\p{{L}}\p{{N}}])")
