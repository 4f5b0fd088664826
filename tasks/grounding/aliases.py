"""The enum labels a text writes: an enum with `x-aliases` is read from the text where it can be.

A currency is an enum, but "€310" states EUR as plainly as "310 EUR" does: choosing it is reading,
not judging. `x-aliases` maps labels to the ways a text writes them (`{"EUR": ["€", "euro",
"euros"]}`); the label itself always counts. A label the text writes is then a value like any other:
it has spans as evidence, grounded decoding offers only the written labels (the model picks among
"€" and "$" only when the text holds both), and its confidence is held to the values' bound, not to
the bound of an uncalibrated choice. A label the text does not write stays a choice, as before.

Matching is exact and case-blind, and a term must not touch a Latin letter on either side: "USD" is
not read in "USDT", nor "$" in "R$" (a real, which no label here names), while "12USD" and "480元"
still write theirs. A match inside a longer match of another label does not count: "C$ 12" writes
CAD, not the USD of its "$".
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import regex

Spans = tuple[tuple[int, int], ...]
MAX_SPANS = 8


@lru_cache(maxsize=1024)  # the same few terms, for every value judged and every record's candidates
def _pattern(term: str) -> regex.Pattern[str]:
    return regex.compile(r"(?<!\p{Latin})" + regex.escape(term) + r"(?!\p{Latin})", regex.IGNORECASE)


def aliases(node: dict[str, Any]) -> dict[Any, list[str]] | None:
    """Each label of `node`'s enum with every way of writing it, or None when it declares no aliases."""
    declared = node.get("x-aliases")
    if not isinstance(declared, dict) or "enum" not in node:
        return None
    terms = {}
    for label in node["enum"]:
        written = declared.get(label, []) if isinstance(label, str) else []
        terms[label] = [t for t in ([label] if isinstance(label, str) else []) + list(written) if t]
    return terms


def written_labels(node: dict[str, Any], text: str) -> dict[Any, Spans]:
    """The labels of an aliased enum that `text` writes, each with its spans ({} without aliases)."""
    terms = aliases(node)
    if not terms:
        return {}
    folded = text.casefold()  # a term not in the folded text cannot match: no search for it
    found = [
        (m.start(), m.end(), label)
        for label, ts in terms.items()
        for t in ts
        if t.casefold() in folded
        for m in _pattern(t).finditer(text, concurrent=False)
    ]
    kept: dict[Any, list[tuple[int, int]]] = {}
    for start, end, label in found:
        if not any(s <= start and end <= e and e - s > end - start and o != label for s, e, o in found):
            kept.setdefault(label, []).append((start, end))
    return {label: tuple(sorted(set(spans)))[:MAX_SPANS] for label, spans in kept.items()}
