"""Solved examples a schema carries (`x-examples`), checked when the schema is loaded.

A small model reads a field's convention better from a solved case than from a sentence (who paid,
which category a parking fee is), so a schema may list examples at its root:
`"x-examples": [{"text": "...", "answer": {...}}, ...]`. They are shown before the record in every
prompt (tasks/prompts.py), where the engine's prefix cache evaluates them once per run.

An example that is wrong teaches the wrong thing, and one whose answer states what its text does not
teaches the model to invent, so each is refused at load, with what to fix: an answer that does not fit
the schema, or a copied string (a name, a project; not an enum label, not a formatted value such as a
date, which is written in its normal form) that its text does not contain. An example's values never
back a record's values: the judge grounds values in the record's text alone.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from jsonschema.protocols import Validator

from formwork.schemas.paths import Node, path_text, values_with_nodes

EXAMPLES = "x-examples"
MAX_EXAMPLES = 8  # each is in every prompt: a few settle a convention, more only cost context


@dataclass(frozen=True)
class Example:
    """One solved example: a text and the answer the schema should give for it."""

    text: str
    answer: dict[str, Any]


def schema_examples(body: dict[str, Any]) -> tuple[Example, ...]:
    """The examples of a loaded (so already checked) schema body, in their order; () when none."""
    listed = body.get(EXAMPLES) or []
    return tuple(Example(e["text"], e["answer"]) for e in listed)


def _folded(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()


def _copied(node: Node) -> bool:
    """Whether a string value of `node` is copied from the text: not a label, not a normal form."""
    branches = [node, *(b for b in node.get("anyOf") or node.get("oneOf") or [] if isinstance(b, dict))]
    written = ("enum", "const", "format", "x-format")
    return node.get("x-grounding") != "none" and not any(k in b for b in branches for k in written)


def example_problem(body: dict[str, Any], checked: Node, validator: Validator) -> str | None:
    """What is wrong with `body`'s `x-examples` as one line that says what to fix, or None."""
    listed = body.get(EXAMPLES)
    if listed is None:
        return None
    shape = f'{EXAMPLES} is a list of {{"text": "...", "answer": {{...}}}} objects'
    if not isinstance(listed, list) or not listed:
        return f"{shape} (at least one): fix it, or leave {EXAMPLES} out"
    if len(listed) > MAX_EXAMPLES:
        return f"{EXAMPLES} has {len(listed)} examples: keep at most {MAX_EXAMPLES} (each is in every prompt)"
    for index, example in enumerate(listed):
        where = f"{EXAMPLES}[{index}]"
        if not isinstance(example, dict) or set(example) != {"text", "answer"}:
            return f"{where}: {shape}, with those two keys only"
        text, answer = example["text"], example["answer"]
        if not isinstance(text, str) or not text.strip():
            return f"{where}.text must be the example's text, a non-empty string"
        if not isinstance(answer, dict):
            return f"{where}.answer must be a JSON object: the answer the schema gives for the text"
        error = next(iter(sorted(validator.iter_errors(answer), key=lambda e: list(e.absolute_path))), None)
        if error is not None:
            at = path_text(list(error.absolute_path))
            return f"{where}.answer does not fit the schema at {at}: {error.message}; fix the answer"
        folded = _folded(text)
        for path, node, value in values_with_nodes(checked, answer):
            if isinstance(value, str) and _copied(node) and _folded(value) not in folded:
                return (
                    f"{where}.answer.{path_text(path)}: {value!r} does not occur in the example's text; "
                    "write it as the text does, or fix the text"
                )
    return None
