"""One phrase backs one field: a free string made of the words that back a number or a date is a copy.

A small model fills free strings with whatever the text offers: `who: "12"` for "Parking, 12 CAD",
`project: "2024-11-02"` for a note whose only date it is. Both are spans of the text, so grounding
alone passes them, but those words already back the amount and the date. So:
- a quoted value (rule `quote`) whose every occurrence lies inside the words that back another
  field's `value` (a number or a date) is not evidence for it; nor is one made only of such words
  and the enum labels the text writes (`who: "12 CAD"` beside an amount of 12 and a currency read
  from "CAD"; the grammar offered that span, and the bundled model took it for the person); a
  longer phrase that merely contains a number ("2 Coffee" beside a quantity of 2) is not inside it;
- a name (a field whose name or description names a person, a company, a project or a client,
  tasks.grounding.cues) that holds the whole of another field's date, or its number beside a written
  label (a price: "35 EUR"), is made of that field's words too: no name holds a date or a price
  ("12 CAD, 2024-11-02, project Maple" as `who`; "Stockholm, 39 SEK, 2024-05-05" as `project`);
- of two sibling quoted fields with the same value (`organization` repeating `name`), the one whose
  cue the text writes right before those words keeps them ("项目：星河" is the project's, though the
  1.5B model wrote 星河 as `who` first; tasks.grounding.cues); where neither or both are cued, the
  later one in the schema's order is the copy (enum-first schemas put what a later field depends on
  first). Siblings only: two line items may well name the same product; and never where one of the
  two is an address field (a web site, an e-mail: schemas.identifiers) and the words have that
  address's shape: a company named after its domain ("PriceFusion.fr") writes its web site's words;
- but each of them needs its own place in the text: elements of one array (`items[0].name`,
  `items[1].name`, ...) with the same words are backed as many times as the text writes them, and
  the later ones are copies (a looping model listed "Aldi" twenty times from one "Aldi");
- a number whose every occurrence is part of a word of a sibling's quoted value (a letter touches it,
  tasks/grounding/word_parts.py) is that value's, not a number of its own: `quantity: 311` beside
  `description: "封筒長311"`; a price is never a word's ("174.37元" stays the amount where a
  description swallowed it);
- a number whose every occurrence lies strictly inside the words that back another field's date is
  a part of that date, not a number of its own: `amount: 2024` or `amount: 12` beside `date:
  2024-01-12` read from "12 Jan 2024" (the bundled model chose both, at p 0.97). Strictly: where a
  number and a date are read from the very same words ("12.05"), the text does not say which it is.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import date
from typing import Any

from formwork.schemas.identifiers import identifier_rule
from formwork.schemas.paths import EMAIL, node_at, parse_path
from formwork.tasks.grounding.cues import cues_for
from formwork.tasks.grounding.evidence import Evidence
from formwork.tasks.grounding.reading import contains, inside, made_of, overlaps, within, word_mask
from formwork.tasks.grounding.spans import cued_starts
from formwork.tasks.grounding.word_parts import glued

INDEX = re.compile(r"\[\d+\]")
DOMAIN = re.compile(r"(?:https?://)?[\w-]+(?:\.[\w-]+)+(?:[/?#]\S*)?", re.IGNORECASE)
ADDRESS_SHAPES = {"url": DOMAIN, "email": EMAIL}


def _parent(path: str) -> str:
    return path.rpartition(".")[0] if "." in path else ""


def _same_words(a: Evidence, b: Evidence) -> bool:
    return " ".join(str(a.value).casefold().split()) == " ".join(str(b.value).casefold().split())


def _repeated_elements(quotes: list[Evidence]) -> list[tuple[Evidence, Evidence]]:
    """Array elements with the same words beyond the number of places the text writes them."""
    groups: dict[tuple[str, str], list[Evidence]] = defaultdict(list)
    for quote in quotes:
        if "[" in quote.path:
            words = " ".join(str(quote.value).casefold().split())
            groups[(INDEX.sub("[]", quote.path), words)].append(quote)
    found = []
    for same in groups.values():
        places = len(set(same[0].spans))
        found += [(extra, same[0]) for extra in same[places:]]
    return found


def copies(
    evidence: list[Evidence], text: str, body: dict[str, Any] | None = None
) -> list[tuple[Evidence, Evidence]]:
    """(copy, original) pairs among the grounded values of `text`, by the rules above; `body` (the
    checked schema) names each field's cues."""

    def field(quote: Evidence) -> tuple[dict[str, Any], str]:
        parts = parse_path(quote.path)
        node = node_at(body, parts) if body is not None else None
        return node or {}, next((p for p in reversed(parts) if isinstance(p, str)), "")

    def cues(quote: Evidence) -> tuple[str, ...]:
        node, name = field(quote)
        return cues_for(str(node.get("description", "")), name)

    def addresses(quote: Evidence) -> bool:
        """Whether `quote` is a web site or e-mail field's value with that address's shape."""
        shape = ADDRESS_SHAPES.get(identifier_rule(*field(quote)) or "")
        return shape is not None and bool(shape.fullmatch(str(quote.value).strip()))

    def cued(quote: Evidence) -> bool:
        starts = cued_starts(text, cues(quote))
        return any(start in starts for start, _ in quote.spans)

    def held_in(quote: Evidence, others: list[Evidence]) -> list[Evidence]:
        """The values among `others` whose words every place of `quote` holds whole."""
        return [v for v in others if all(contains(place, v.spans) for place in quote.spans)]

    values = [e for e in evidence if e.grounded and e.rule == "value" and e.spans]
    quotes = [e for e in evidence if e.grounded and e.rule == "quote" and e.spans]
    labels = [e for e in evidence if e.grounded and e.rule == "none" and e.spans]  # aliased enums
    others = [*values, *labels]
    mask = word_mask(text, (span for e in others for span in e.spans)) if quotes and others else ""
    found = []
    for index, quote in enumerate(quotes):
        holders = [v for v in values if v.path != quote.path and all(inside(s, v.spans) for s in quote.spans)]
        if not holders and mask and all(made_of(mask, s) for s in quote.spans):
            holders = [e for e in others if any(overlaps(s, e.spans) for s in quote.spans)][:1]
        if not holders and cues(quote):  # a name holds no date, nor a price (a number and its label)
            numbers = held_in(quote, [v for v in values if _is_number(v.value)])
            holders = held_in(quote, [v for v in values if _is_date(v.value)]) or (
                numbers if held_in(quote, labels) else []
            )
        repeated = [
            q for q in quotes[:index]
            if _parent(q.path) == _parent(quote.path) and _same_words(q, quote)
            and not (addresses(q) or addresses(quote))
        ]  # fmt: skip
        if holders:
            found.append((quote, holders[0]))
        elif repeated:
            first = repeated[0]
            found.append((first, quote) if cued(quote) and not cued(first) else (quote, first))
    dates = [v for v in values if _is_date(v.value)]
    refused = {copy.path for copy, _ in found}  # quotes that are copies hold no number of their own
    for number in (v for v in values if _is_number(v.value)):
        parts = [d for d in dates if d.path != number.path and all(within(s, d.spans) for s in number.spans)]
        parts = parts or [
            q for q in quotes
            if _parent(q.path) == _parent(number.path) and q.path not in refused
            and all(within(s, q.spans) and glued(text, s) for s in number.spans)
        ]  # fmt: skip
        if parts:
            found.append((number, parts[0]))
    already = {copy.path for copy, _ in found}
    return found + [pair for pair in _repeated_elements(quotes) if pair[0].path not in already]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_date(value: object) -> bool:
    """A value-rule string that is an ISO date or date-time (what a `value` date field holds)."""
    try:
        return isinstance(value, str) and bool(date.fromisoformat(value[:10]))
    except ValueError:
        return False
