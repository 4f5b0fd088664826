"""The two passes' prompts: think freely with the field guide, then copy the findings into JSON.

The reasoning prompt never asks for JSON: forcing the answer's shape first cuts the model's reasoning.
The formatting prompt continues that conversation, so the source text stays in view and exact values
(an e-mail, an amount) can be copied from it rather than from the notes' paraphrase.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from formwork.schemas.examples import schema_examples
from formwork.schemas.registry import Schema
from formwork.tasks.engines.base import Message

MAX_SOURCE_CHARS = 6000  # the source is cut here in prompts (the full text stays in the database)


def long_text_warning(size: int) -> str:
    """The warning a record longer than one prompt carries from its source (tasks.long reads it in
    parts, up to `max_parts`, or it is cut where splitting is off)."""
    shown = MAX_SOURCE_CHARS
    return f"the text has {size} characters, more than one prompt shows ({shown}): read in parts, or cut"


def _describe(node: dict[str, Any]) -> str:
    if "enum" in node:
        values = ", ".join("null" if v is None else str(v) for v in node["enum"])
        return f"one of: {values}"
    declared = node.get("type", "any")
    kinds = [t for t in (declared if isinstance(declared, list) else [declared]) if t != "null"]
    text = " or ".join(kinds)
    if node.get("format"):
        text += f", {node['format']}"
    if "items" in node and isinstance(node["items"], dict):
        fields = ", ".join(node["items"].get("properties", {}))
        text += f" of {{{fields}}}" if fields else ""
    if "null" in (declared if isinstance(declared, list) else [declared]):
        text += ", or null"
    return text


def _nested(node: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The fields one level down: an object's own, or the elements' of an array of objects."""
    for branch in [node, *(b for b in node.get("anyOf", []) if isinstance(b, dict))]:
        if isinstance(branch.get("items"), dict) and branch["items"].get("properties"):
            return "[].", branch["items"]["properties"]
        if branch.get("properties"):
            return ".", branch["properties"]
    return "", {}


def _guide_lines(properties: dict[str, Any], prefix: str, depth: int) -> list[str]:
    lines = []
    for key, node in properties.items():
        node = node if isinstance(node, dict) else {}
        lines.append(f"{'  ' * depth}- {prefix}{key} ({_describe(node)}): {node.get('description', '')}")
        joint, children = _nested(node)
        if children and depth < 3:
            lines += _guide_lines(children, f"{prefix}{key}{joint}", depth + 1)
    return lines


def field_guide(schema: Schema) -> str:
    """One line per field: its name, what values it takes, and what it means; nested fields indented
    under their parent with their path (`items[].amount`), so lists of entities are explained too."""
    lines = [schema.checked_body.get("description", ""), *_guide_lines(schema.properties, "", 0)]
    return "\n".join(line for line in lines if line)


SYSTEM = "You read messages carefully and note the facts they contain. Think step by step."


def solved_examples(schema: Schema) -> str:
    """The schema's solved examples as the prompt shows them ("" when it has none), each text with its
    answer, said to be other texts: their values are theirs, not the record's (the judge refuses any the
    record lacks). An answer shows only the fields of the schema read: a long list's header is read
    under its header fields alone (schemas.roles.header_body), and its examples answer as it would."""
    examples = schema_examples(schema.body)
    if not examples:
        return ""
    shown = []
    for n, example in enumerate(examples, 1):
        answer = {k: v for k, v in example.answer.items() if k in schema.properties}
        shown.append(
            f"Example {n} text:\n{example.text}\nExample {n} answer: {json.dumps(answer, ensure_ascii=False)}"
        )
    head = "Solved examples (other texts: never copy their values; read the fields from the text below):"
    return "\n\n".join([head, *shown])


def reading_messages(schema: Schema, text: str, ask: str) -> list[Message]:
    """The text and the field guide, then what to do with them (`ask`). Every reading of a record opens
    the same way, so a reading that follows another finds the text and the guide already evaluated in
    the engine's cache (the embedded engine's slots, vLLM's prefix cache) and reads only its own ask.

    A schema with solved examples (`x-examples`, schemas/examples.py) puts the guide and the examples
    first and the text after them: that fixed part is the same for every record, so the cache evaluates
    it once per run, not once per record. Without examples the prompt is as it always was (the text
    first): a calibration is keyed by its prompts (tasks/evaluation/key.py), and stays valid."""
    shown, guide, solved = text[:MAX_SOURCE_CHARS], field_guide(schema), solved_examples(schema)
    if solved:
        content = f"Find these fields in the text:\n{guide}\n\n{solved}\n\nText:\n{shown}\n\n{ask}"
    else:
        content = f"Text:\n{shown}\n\nFind these fields in the text:\n{guide}\n\n{ask}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]


def reasoning_messages(schema: Schema, text: str) -> list[Message]:
    """Ask for free-text notes on each field, with room to quote, compute and doubt."""
    return reading_messages(
        schema,
        text,
        "For each field, quote what the text says and decide its value. "
        "Say null when the text does not give it. Write plain notes, not JSON.",
    )


def formatting_messages(
    schema: Schema, text: str, notes: str, feedback: list[str] | None = None
) -> list[Message]:
    """Continue the reasoning conversation: the notes as the model's turn, then ask for the JSON.

    Continuing rather than starting afresh makes the whole reasoning prompt (and often the notes) a
    prefix of the formatting prompt, so an engine with a prefix cache (vLLM's, or the embedded engine's
    KV reuse) reads only the last turn again: the formatting pass stays cheap. `feedback` lists what
    was wrong with the previous answer.
    """
    request = "Now write these notes as one JSON object with exactly those fields."
    if feedback:
        request += "\n\nYour previous answer was rejected:\n" + "\n".join(f"- {f}" for f in feedback)
    return [
        *reasoning_messages(schema, text),
        {"role": "assistant", "content": notes},
        {"role": "user", "content": request},
    ]


def prompt_hash(messages: list[Message]) -> str:
    """A stable short hash of a prompt, stored with each call so identical prompts can be grouped."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]
