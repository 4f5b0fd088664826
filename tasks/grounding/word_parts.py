"""A number that is part of a word is no count: `食パン　６枚切` is sliced bread, `味噌　750g` a tub of miso.

The 1.5B read both receipt lines with the product's own number as the item's quantity (6, 750), and
`封筒長311` (an envelope's size code) as 311; the items still added up to the receipt's total, so no
check saw it. A number a letter touches ("６枚切", "750g", "LH400") belongs to that word, unless the
number stands against a count's mark (x3, 2点, ３コ, 10個) or a currency (花了480元, where Chinese and
Japanese write no space). So:
- a count field (named quantity, qty, count, ...) whose value the text writes only as such a word's
  part, or only as a price (a currency touches it: `£1.15`, `¥２９８`), is not backed (`word_parts`):
  the 1.5B gave a line's price as its count, and the judge passed it;
- a number of any field written only inside a sibling's quoted value as such a word's part is that
  value's words (tasks/grounding/copies.py uses `glued`).
A decimal is never a word's part here ("0.915kg" is a weight, a quantity the receipt schema asks for).
"""

from __future__ import annotations

import re

from formwork.tasks.grounding.evidence import Evidence
from formwork.tasks.grounding.prewritten import field_key

COUNT_MARKS = "xX×@点コ個"  # "x3", "2点", "３コ": a count written against its mark
CURRENCIES = "元円圓원¥$€£₩"  # "680円", "花了480元": a price against its currency
NOT_WORDS = frozenset(COUNT_MARKS + CURRENCIES)
CURRENCY_SIGNS = frozenset(CURRENCIES)
COUNT_KEY = re.compile(r"^(?:quantity|qty|count|pieces|units|number_of_\w+|\w+_count)$")


def glued(text: str, span: tuple[int, int]) -> bool:
    """Whether the whole number at `span` is part of a word: a letter touches it, and neither a count's
    mark nor a currency does."""
    before = text[span[0] - 1] if span[0] > 0 else " "
    after = text[span[1]] if span[1] < len(text) else " "
    if any(c in ".," for c in text[span[0] : span[1]]) or {before, after} & NOT_WORDS:
        return False
    return before.isalpha() or after.isalpha()


def priced(text: str, span: tuple[int, int]) -> bool:
    """Whether a currency touches the number at `span` ("£1.15", "¥２９８", "298円"); a space apart it may
    be a count before a price ("Apples x3 £2.40")."""
    before, after = text[span[0] - 1 : span[0]] if span[0] else "", text[span[1] : span[1] + 1]
    return bool({before, after} & CURRENCY_SIGNS)


def word_at(text: str, span: tuple[int, int]) -> str:
    """The word the number at `span` is part of: the run of non-space characters around it."""
    start, end = span
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end]


def word_parts(evidence: list[Evidence], text: str) -> dict[str, str]:
    """{path: word} for the count fields whose value the text writes only as part of a word, or only
    as a price."""
    found = {}
    for proof in evidence:
        counted = COUNT_KEY.match(field_key(proof.path)) and isinstance(proof.value, int | float)
        if not (counted and proof.grounded and proof.spans):
            continue
        if all(glued(text, span) or priced(text, span) for span in proof.spans):
            found[proof.path] = word_at(text, proof.spans[0])
    return found
