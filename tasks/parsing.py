"""The parsing ladder for output written without a grammar (the `prompt-json` mode).

A model asked for JSON in the prompt wraps it in prose, fences it, or writes JavaScript instead. Each
step is tried in order and the first that yields a JSON object wins; its name is kept with the call
(`parse_step`) and counted in the eval report, so the cost of going without a grammar is visible:

    strict     json.loads of the whole text
    fences     the inside of a ```json ... ``` (or bare ```) code fence
    balanced   the first balanced {...} in the text, strings and escapes respected
    repair     json-repair (comments, bare keys, single quotes, True/None, trailing commas, unclosed
               brackets), on the first `{` onwards
    none       nothing worked: "no JSON came back"

Only a JSON object counts: the schemas here are all objects, and a bare string or number that a
lenient step could produce from prose would hide a failure.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

ParseStep = Literal["strict", "fences", "balanced", "repair", "none"]
STEPS: tuple[ParseStep, ...] = ("strict", "fences", "balanced", "repair", "none")
FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def first_balanced(text: str) -> str | None:
    """The first `{...}` whose braces balance, ignoring braces inside JSON strings; None if none closes."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start : index + 1]
        start = text.find("{", start + 1)
    return None


def _repaired(text: str) -> dict[str, Any] | None:
    from json_repair import repair_json  # imported only when the cheap steps failed

    start = text.find("{")
    if start == -1:
        return None
    try:
        value = repair_json(text[start:], return_objects=True)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and value else None


def parse_ladder(text: str) -> tuple[dict[str, Any] | None, ParseStep]:
    """Climb the ladder; return the object found (or None) and the step that found it."""
    found = _object(text)
    if found is not None:
        return found, "strict"
    for fenced in FENCE.findall(text):
        found = _object(fenced.strip())
        if found is not None:
            return found, "fences"
    balanced = first_balanced(text)
    if balanced is not None:
        found = _object(balanced)
        if found is not None:
            return found, "balanced"
    found = _repaired(text)
    if found is not None:
        return found, "repair"
    return None, "none"
