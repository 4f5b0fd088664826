"""Validate a formatting pass's output and decide the record's status: ok, partial or failed.

Validation is never skipped, even though the grammar should already guarantee the shape: grammar
engines drop keywords silently, a server may ignore structured outputs, and some checks are beyond any
grammar (a date that exists, a value copied from the schema's own examples).

- ok: valid JSON, every field passes and is backed by the source text (`tasks.grounding`) or, for an
  enum or boolean under an `x-min-confidence` bound, was chosen with enough probability
  (`tasks.confidence`), and both passes stopped with `stop`;
- partial: only non-critical fields failed; they are set to null and listed;
- failed: a critical field failed, the root is wrong, a pass stopped at `length` (or aborted), or no
  JSON came back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Literal

from schemas.registry import Schema
from tasks.confidence import chosen_paths, field_confidences, min_confidence
from tasks.engines.base import Completion
from tasks.grounding import Evidence, ground

Status = Literal["ok", "partial", "failed"]
ROOT = "(root)"
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
TOP = re.compile(r"[^.\[]+")


@dataclass
class Verdict:
    """The decision for one record, with every reason spelled out for the results table."""

    status: Status
    data: dict[str, Any] | None
    errors: list[str] = field(default_factory=list)
    nulled: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)  # the field errors, which a retry can be told
    evidence: list[dict[str, Any]] = field(default_factory=list)  # `Evidence.as_row()` per value


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


def reference_date(meta: dict[str, Any] | None) -> date | None:
    """The record's `reference_date` (ISO), against which "yesterday" is derived; None if absent or bad."""
    raw = (meta or {}).get("reference_date")
    try:
        return date.fromisoformat(str(raw)[:10]) if raw else None
    except ValueError:
        return None


def _nullable(node: dict[str, Any]) -> bool:
    declared = node.get("type")
    return (
        None in node.get("enum", [])
        or declared == "null"
        or (isinstance(declared, list) and "null" in declared)
    )


def _ungrounded(schema: Schema, proof: Evidence) -> str:
    name = re.split(r"[.\]]", proof.path)[-1].split("[")[0] or proof.path
    shown = (
        proof.value if isinstance(proof.value, int | float) else json.dumps(proof.value, ensure_ascii=False)
    )
    advice = f"copy the {name} as it is written"
    if proof.rule == "value" and isinstance(proof.value, str):
        advice = f"give the {name} the text states, in the schema's format"
    if _nullable(schema.properties.get(proof.path, {})):
        advice += ", or null if the text has none"
    return f"{proof.path} {shown} does not appear in the text; {advice}"


def _evidence_errors(
    schema: Schema, data: dict[str, Any], source: str, formatting: Completion, meta: dict[str, Any] | None,
    bound: float, skip: set[str],
) -> tuple[list[Evidence], list[tuple[str, str]]]:  # fmt: skip
    """Ground every value in the source and weigh every chosen value; the failures are field errors."""
    evidence = ground(schema.body, data, source, reference_date(meta))
    confidences = field_confidences(schema.body, data, formatting)
    evidence = [replace(e, confidence=confidences.get(e.path)) for e in evidence]
    errors = [
        (top, _ungrounded(schema, e))
        for e in evidence
        if not e.grounded and (top := TOP.match(e.path).group()) not in skip  # type: ignore[union-attr]
    ]
    for path, node in chosen_paths(schema.body, data):
        least, top = min_confidence(node, bound), TOP.match(path).group()  # type: ignore[union-attr]
        if path in confidences and confidences[path] < least and top not in skip:
            value = json.dumps(next(e.value for e in evidence if e.path == path))
            errors.append(
                (top, f"{path} {value} was a guess (probability {confidences[path]:.2f}, below {least:.2f}); "
                      "choose the value the text supports")
            )  # fmt: skip
    return evidence, errors


def judge(
    schema: Schema,
    source: str,
    reasoning: Completion,
    formatting: Completion,
    *,
    meta: dict[str, Any] | None = None,
    min_confidence: float = 0.0,
) -> Verdict:
    """Decide the status of one record from both passes' completions.

    `source` is the record's text and the only place a value may be found; `meta` may hold the
    `reference_date` for relative dates; `min_confidence` is the run's bound for enum and boolean
    values (a field's `x-min-confidence` overrides it; 0 is off).
    """
    try:
        data = json.loads(formatting.text)
    except json.JSONDecodeError as exc:
        reason = f"no JSON came back ({exc.msg} at character {exc.pos}; finish={formatting.finish_reason})"
        return Verdict("failed", None, [reason])
    field_errors = _schema_errors(schema, data)
    evidence: list[Evidence] = []
    if isinstance(data, dict):
        field_errors += _semantic_errors(schema, data, source)
        skip = {top for top, _ in field_errors}
        evidence, errors = _evidence_errors(schema, data, source, formatting, meta, min_confidence, skip)
        field_errors += errors
    rows = [e.as_row() for e in evidence]
    stops = [
        f"{name} pass stopped at {done.finish_reason} after {done.completion_tokens} tokens"
        for name, done in (("reasoning", reasoning), ("formatting", formatting))
        if done.finish_reason != "stop"
    ]
    feedback = [message for _, message in field_errors]
    bad_fields = {top for top, _ in field_errors}
    if stops or not isinstance(data, dict) or ROOT in bad_fields or bad_fields & schema.critical_fields:
        data = data if isinstance(data, dict) else None
        return Verdict("failed", data, stops + feedback, feedback=feedback, evidence=rows)
    if bad_fields:
        nulled = sorted(bad_fields)
        return Verdict("partial", {**data, **dict.fromkeys(nulled)}, feedback, nulled, feedback, rows)
    return Verdict("ok", data, evidence=rows)
