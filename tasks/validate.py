"""Validate a formatting pass's output and decide the record's status: ok, partial or failed.

Validation is never skipped, even though the grammar should already guarantee the shape: grammar
engines drop keywords silently, a server may ignore structured outputs, and some checks are beyond any
grammar (a date that exists, a value copied from the schema's own examples).

- ok: valid JSON, every field passes, both passes stopped with `stop`;
- partial: only non-critical fields failed; they are set to null and listed;
- failed: a critical field failed, the root is wrong, a pass stopped at `length` (or aborted), or no
  JSON came back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from schemas.registry import Schema
from tasks.engines.base import Completion

Status = Literal["ok", "partial", "failed"]
ROOT = "(root)"
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")


@dataclass
class Verdict:
    """The decision for one record, with every reason spelled out for the results table."""

    status: Status
    data: dict[str, Any] | None
    errors: list[str] = field(default_factory=list)
    nulled: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)  # the field errors, which a retry can be told


def _semantic_errors(schema: Schema, data: dict[str, Any], source: str) -> list[tuple[str, str]]:
    """Checks no grammar can make: plausible e-mails, and no values copied from the examples."""
    errors = []
    for key, node in schema.properties.items():
        value = data.get(key)
        if node.get("x-format") == "email" and isinstance(value, str) and not EMAIL.match(value):
            errors.append((key, f"{key}: {value!r} does not look like an e-mail address"))
        if value is not None and value in node.get("examples", []) and str(value) not in source:
            errors.append((key, f"{key}: {value!r} is the schema's example, not found in the text"))
    return errors


def _schema_errors(schema: Schema, data: Any) -> list[tuple[str, str]]:
    errors = []
    for error in schema.validator.iter_errors(data):
        path = list(error.absolute_path)
        top = str(path[0]) if path else ROOT
        where = ".".join(str(p) for p in path) or ROOT
        errors.append((top, f"{where}: {error.message}"))
    return errors


def judge(schema: Schema, source: str, reasoning: Completion, formatting: Completion) -> Verdict:
    """Decide the status of one record from both passes' completions."""
    try:
        data = json.loads(formatting.text)
    except json.JSONDecodeError as exc:
        reason = f"no JSON came back ({exc.msg} at character {exc.pos}; finish={formatting.finish_reason})"
        return Verdict("failed", None, [reason])
    field_errors = _schema_errors(schema, data)
    if isinstance(data, dict):
        field_errors += _semantic_errors(schema, data, source)
    stops = [
        f"{name} pass stopped at {done.finish_reason} after {done.completion_tokens} tokens"
        for name, done in (("reasoning", reasoning), ("formatting", formatting))
        if done.finish_reason != "stop"
    ]
    feedback = [message for _, message in field_errors]
    bad_fields = {top for top, _ in field_errors}
    if stops or not isinstance(data, dict) or ROOT in bad_fields or bad_fields & schema.critical_fields:
        return Verdict(
            "failed", data if isinstance(data, dict) else None, stops + feedback, feedback=feedback
        )
    if bad_fields:
        nulled = sorted(bad_fields)
        return Verdict("partial", {**data, **dict.fromkeys(nulled)}, feedback, nulled, feedback)
    return Verdict("ok", data)
