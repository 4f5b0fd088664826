"""The two passes' prompts: think freely with the field guide, then copy the findings into JSON.

The reasoning prompt never asks for JSON: forcing the answer's shape first cuts the model's reasoning.
The formatting prompt gives the source text and the notes, so exact values (an e-mail, an amount) can
be copied from the source rather than from the notes' paraphrase.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from schemas.registry import Schema
from tasks.engines.base import Message

MAX_SOURCE_CHARS = 6000  # the source is cut here in prompts (the full text stays in the database)


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


def field_guide(schema: Schema) -> str:
    """One line per field: its name, what values it takes, and what it means."""
    lines = [schema.body.get("description", "")]
    for key, node in schema.properties.items():
        lines.append(f"- {key} ({_describe(node)}): {node.get('description', '')}")
    return "\n".join(line for line in lines if line)


def reasoning_messages(schema: Schema, text: str) -> list[Message]:
    """Ask for free-text notes on each field, with room to quote, compute and doubt."""
    return [
        {
            "role": "system",
            "content": "You read messages carefully and note the facts they contain. Think step by step.",
        },
        {
            "role": "user",
            "content": (
                f"Text:\n{text[:MAX_SOURCE_CHARS]}\n\n"
                f"Find these fields in the text:\n{field_guide(schema)}\n\n"
                "For each field, quote what the text says and decide its value. "
                "Say null when the text does not give it. Write plain notes, not JSON."
            ),
        },
    ]


def formatting_messages(
    schema: Schema, text: str, notes: str, feedback: list[str] | None = None
) -> list[Message]:
    """Ask to copy the notes into the schema's JSON; `feedback` lists what was wrong last time."""
    content = (
        f"Text:\n{text[:MAX_SOURCE_CHARS]}\n\nNotes:\n{notes}\n\n"
        f"Fields:\n{field_guide(schema)}\n\n"
        "Write the JSON object with these fields, using the notes and the text."
    )
    if feedback:
        content += "\n\nYour previous answer was rejected:\n" + "\n".join(f"- {f}" for f in feedback)
    return [
        {"role": "system", "content": "You convert notes into JSON that follows the given fields exactly."},
        {"role": "user", "content": content},
    ]


def prompt_hash(messages: list[Message]) -> str:
    """A stable short hash of a prompt, stored with each call so identical prompts can be grouped."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]
