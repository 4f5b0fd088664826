"""Validate a formatting pass's output and decide the record's status: ok, partial or failed.

Validation is never skipped, even though the grammar should already guarantee the shape: grammar
engines drop keywords silently, a server may ignore structured outputs, and some checks are beyond any
grammar (a date that exists, a value copied from the schema's own examples).

- ok: valid JSON, every field passes, both passes stopped with `stop`;
- partial: only non-critical fields failed; each is set to null where it stands (a path such as
  `items[2].amount`, or the nearest ancestor that may be null) and listed;
- failed: a critical field failed, the root is wrong, a pass stopped at `length` (or aborted), or no
  JSON came back.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from schemas.paths import Path, null_target, path_text, semantic_errors, set_null
from schemas.registry import Schema
from tasks.engines.base import Completion

Status = Literal["ok", "partial", "failed"]


@dataclass
class Verdict:
    """The decision for one record, with every reason spelled out for the results table."""

    status: Status
    data: dict[str, Any] | None
    errors: list[str] = field(default_factory=list)
    nulled: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)  # the field errors, which a retry can be told


def _field_errors(schema: Schema, data: Any, source: str) -> list[tuple[Path, str]]:
    """jsonschema on the checked body, then the semantic checks, each error with its path."""
    errors = [
        (tuple(error.absolute_path), f"{path_text(tuple(error.absolute_path))}: {error.message}")
        for error in schema.validator.iter_errors(data)
    ]
    return errors + semantic_errors(schema.checked_body, data, source)


def _nulled(schema: Schema, data: dict[str, Any], errors: list[tuple[Path, str]]) -> tuple[Any, list[str]]:
    """`data` with each failed path (or its nearest nullable ancestor) set to null, and those paths;
    (None, []) when one cannot be nulled (a critical or non-nullable node, or the root)."""
    targets = {null_target(schema.checked_body, path) for path, _ in errors}
    if None in targets or () in targets:
        return None, []
    fixed, nulled = copy.deepcopy(data), []
    for target in sorted(targets, key=len):  # type: ignore[arg-type]
        if all(target[:n] not in targets for n in range(1, len(target))):  # an ancestor nulled: moot
            set_null(fixed, target)  # type: ignore[arg-type]
            nulled.append(path_text(target))  # type: ignore[arg-type]
    return fixed, sorted(nulled)


def judge(schema: Schema, source: str, reasoning: Completion, formatting: Completion) -> Verdict:
    """Decide the status of one record from both passes' completions."""
    try:
        data = json.loads(formatting.text)
    except json.JSONDecodeError as exc:
        reason = f"no JSON came back ({exc.msg} at character {exc.pos}; finish={formatting.finish_reason})"
        return Verdict("failed", None, [reason])
    field_errors = _field_errors(schema, data, source)
    stops = [
        f"{name} pass stopped at {done.finish_reason} after {done.completion_tokens} tokens"
        for name, done in (("reasoning", reasoning), ("formatting", formatting))
        if done.finish_reason != "stop"
    ]
    feedback = [message for _, message in field_errors]
    fixed, nulled = (
        _nulled(schema, data, field_errors) if isinstance(data, dict) and field_errors else (data, [])
    )
    if fixed is not None and field_errors and _field_errors(schema, fixed, source):
        fixed = None  # nulling did not make it valid (a constraint across fields): never store it as partial
    if stops or not isinstance(data, dict) or fixed is None:
        return Verdict(
            "failed", data if isinstance(data, dict) else None, stops + feedback, feedback=feedback
        )
    if field_errors:
        return Verdict("partial", fixed, feedback, nulled, feedback)
    return Verdict("ok", data)
