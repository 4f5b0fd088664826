"""One phrase backs one field: a free string made of the words that back a number or a date is a copy.

A small model fills free strings with whatever the text offers: `who: "12"` for "Parking, 12 CAD",
`project: "2024-11-02"` for a note whose only date it is. Both are spans of the text, so grounding
alone passes them, but those words already back the amount and the date. A quoted value (rule
`quote`) whose every occurrence lies inside the words that back another field's `value` (a number or
a date) is therefore not evidence for it. Only quote-inside-value is judged: two quoted fields may
share words by design (a billing and a shipping name), and a longer phrase that merely contains a
number ("2 Coffee" beside a quantity of 2) is not inside it.
"""

from __future__ import annotations

from tasks.grounding import Evidence


def _inside(span: tuple[int, int], spans: tuple[tuple[int, int], ...]) -> bool:
    return any(start <= span[0] and span[1] <= end for start, end in spans)


def copies(evidence: list[Evidence]) -> list[tuple[Evidence, Evidence]]:
    """(copy, original) pairs: a grounded quote whose every span lies inside another value's spans."""
    values = [e for e in evidence if e.grounded and e.rule == "value" and e.spans]
    found = []
    for quote in evidence:
        if not (quote.grounded and quote.rule == "quote" and quote.spans):
            continue
        original = next(
            (v for v in values if v.path != quote.path and all(_inside(s, v.spans) for s in quote.spans)),
            None,
        )
        if original is not None:
            found.append((quote, original))
    return found
