"""The ways a model writes "none" inside a string: a quoted field's `"null"` is its null.

A model that means "the text names nobody" often writes the word rather than the literal: the 1.5B
coder model wrote `"who": "null"` for a keyboard bought by no one named (BENCHMARKS section 32).
Grounding off, the judge refused that string (not in the text) and left the field null, right by
accident; grounding on, the grammar offered only the text's spans and null, so having opened a quote
the model had to choose a span ("Bought a new keyboard for the office"), a wrong value. So:
- a nullable `quote` field's grammar under grounded decoding also offers `SPELLINGS`
  (tasks.grounding.candidates), so the quote the model opened can still say "none";
- the judge reads any spelling of absence (`ABSENT`, case and edge spaces aside) at a nullable quote
  field as null before anything else (`read_absent`). Its confidence is then the null's: the
  probability of the tokens that wrote it, a lower bound of the model's probability of "none"
  (the literal null's share is not added: the engine reports only the tokens it chose).
Only quoted free strings: an enum's "none" is a label, and a number or date has no such spelling.
"""

from __future__ import annotations

import copy
from typing import Any

from formwork.schemas.annotations import rule_for
from formwork.schemas.paths import Path, accepts_null, set_null, values_with_nodes

SPELLINGS = ("null", "None", "none", "N/A", "unknown", "")  # what models write, offered by the grammar
ABSENT = frozenset({*(s.casefold() for s in SPELLINGS), "n/a", "nil", "-", "not mentioned", "not specified",
                    "not stated", "not given", "not provided", "not applicable"})  # fmt: skip


def absent(value: Any) -> bool:
    """Whether `value` is a string that says "none" rather than naming something."""
    return isinstance(value, str) and value.strip().casefold() in ABSENT


def read_absent(body: dict[str, Any], data: Any) -> Any:
    """`data` with every spelling of absence at a nullable quote field set to null (a copy where any
    is; `data` itself otherwise). A field under an `x-grounding: none` ancestor is no quote."""
    unquoted: list[Path] = []
    found: list[Path] = []
    for path, node, value in values_with_nodes(body, data):
        if node.get("x-grounding") == "none":
            unquoted.append(path)
        if (
            path
            and absent(value)
            and accepts_null(node)
            and rule_for(node) == "quote"
            and not any(path[: len(above)] == above for above in unquoted)
        ):
            found.append(path)
    if not found:
        return data
    data = copy.deepcopy(data)
    for path in found:
        set_null(data, path)
    return data
