"""A person's name in a text that writes names with capitals is written with one.

The 1.5B, asked who spent the money, took "team" from "got the team a round of coffees at Blue Bottle",
"client" from "the client event, ... project Harmony", "finance" from "@finance ... — Mei": common
words, offered as candidates like any span. A text that capitalises a word in the middle of a line
("at Blue Bottle", "project Harmony") writes names that way, so there a span with no capital letter is
no person's name. A text that writes no capital but at the start of a line or sentence ("parking 12
bucks downtown yesterday -jess", "regards\\nsteve h") may write names in lower case too, and keeps
them; a script without case (Chinese, Japanese, Korean) is never narrowed.
"""

from __future__ import annotations

import regex

# A capital letter after a word on the same line, not after the end of a sentence.
CAPITAL_INSIDE = regex.compile(r"[\p{Ll}\p{N},;:)]\h+[\p{Lu}\p{Lt}]")
CASED = regex.compile(r"[\p{Lu}\p{Ll}\p{Lt}]")
UPPER = regex.compile(r"[\p{Lu}\p{Lt}]")


def writes_capitals(text: str) -> bool:
    """The text capitalises a word inside a line, as texts that capitalise names do."""
    return CAPITAL_INSIDE.search(text) is not None


def uncapitalised(span: str) -> bool:
    """The span has letters with case and not one capital among them ("team", not "Mei" or "星河")."""
    return CASED.search(span) is not None and UPPER.search(span) is None
