"""Validate a formatting pass's output and decide the record's status: ok, partial or failed.

Validation is never skipped, even though the grammar should already guarantee the shape: grammar
engines drop keywords silently, a server may ignore structured outputs, and some checks are beyond any
grammar (a date that exists, a value copied from the schema's own examples).

- ok: valid JSON, every field passes and is backed by the source text (`tasks.grounding`; a JSON-like
  example the text quotes backs nothing, `tasks.grounding.prewritten`), was chosen with the probability
  its confidence bound asks (`x-min-confidence`, the run's or a calibration's;
  `tasks.confidence.probability`), and both passes stopped with `stop`;
- partial: only non-critical fields failed; each is set to null where it stands (a path such as
  `items[2].amount`, or the nearest ancestor that may be null) and listed;
- failed: a critical field failed, the root is wrong, a pass stopped at `length` (or aborted), or no
  JSON came back.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from formwork.schemas.conform import conform
from formwork.schemas.paths import Path, null_target, parse_path, path_text, semantic_errors, set_null
from formwork.schemas.registry import Schema
from formwork.tasks.confidence.bounds import HELD, Bounds, Held, held_again, held_nulls, held_values
from formwork.tasks.confidence.probability import (
    field_confidences,
    field_null_mass,
    field_rivals,
    value_paths,
)
from formwork.tasks.confidence.renormalise import logprob_mode, renormalised
from formwork.tasks.engines.base import Completion
from formwork.tasks.grounding.absent import read_absent
from formwork.tasks.grounding.anchors import anchored_reference
from formwork.tasks.grounding.copies import copies
from formwork.tasks.grounding.evidence import Evidence, ground
from formwork.tasks.grounding.prewritten import prewritten
from formwork.tasks.grounding.word_parts import word_parts
from formwork.tasks.judged_values import judged_values

Status = Literal["ok", "partial", "failed"]
Weights = dict[str, float]  # per value or null path


@dataclass
class Verdict:
    """The decision for one record, with every reason spelled out for the results table."""

    status: Status
    data: dict[str, Any] | None
    errors: list[str] = field(default_factory=list)
    nulled: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)  # the errors a retry can fix, which it is told
    evidence: list[dict[str, Any]] = field(default_factory=list)  # `Evidence.as_row()` per value
    values: list[dict[str, Any]] = field(default_factory=list)  # every value and null as judged (`judged`)
    trust: list[dict[str, Any]] = field(default_factory=list)  # per value: the readings, score, certified
    unsure_only: bool = False  # partial only for values no calibration certified: a stronger model may

    def least_confidence(self) -> float | None:
        """The least probability among the values and nulls this row keeps as passed; None when none
        of them has one (no logprobs, or nothing kept)."""
        found = [v["confidence"] for v in self.values if v["verdict"] in KEPT and v["confidence"] is not None]
        return min(found) if found else None

    def held(self) -> frozenset[str]:
        """The paths this attempt held to their bounds (a value below it, an unsure null)."""
        return frozenset(v["path"] for v in self.values if v["verdict"] in ("below bound", "unsure null"))

    def capped(self, reason: str) -> Verdict:
        """This verdict at best `partial`, with `reason` among its errors: for a row that may be right
        but that nothing vouches for (a cut text, a run no calibration covers)."""
        status: Status = "partial" if self.status == "ok" else self.status
        return replace(self, status=status, errors=[*self.errors, reason])

    def judged(self) -> dict[str, Any]:
        """What the judge decided about one formatting attempt, as `model_calls.judged` stores it."""
        return {"status": self.status, "least_confidence": self.least_confidence(), "values": self.values}


KEPT = ("passed", "null")  # value verdicts a row keeps as checked: a value that passed, a certified null
EMPTY_ROW = "no value at all"  # begins the reason of a row whose every field is null


def only_guesses(errors: list[str]) -> bool:
    """True when a row failed its confidence bounds and nothing else: calibration's "ok at bound 0"."""
    return bool(errors) and all(error.endswith(HELD) for error in errors)


def field_errors(schema: Schema, data: Any, source: str) -> list[tuple[Path, str]]:
    """jsonschema on the checked body, then the semantic checks, each error with its path. Absent values
    are left out first (schemas/conform.py), so `oneOf` of `required`, `not`, `dependencies` or
    `maxProperties` never count a grammar's `null` as a key the text gave."""
    shown = conform(schema, data).data if isinstance(data, dict) else data
    errors = [
        (tuple(error.absolute_path), f"{path_text(tuple(error.absolute_path))}: {error.message}")
        for error in schema.validator.iter_errors(shown)
    ]
    return errors + semantic_errors(schema.checked_body, data, source)


def null_failures(
    schema: Schema, data: dict[str, Any], errors: list[tuple[Path, str]]
) -> tuple[Any, list[str]]:
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


def _copied(copy: Evidence, original: Evidence) -> str:
    shown = json.dumps(copy.value, ensure_ascii=False)
    return (
        f"{copy.path} {shown} is the text that gives {original.path}, not a value of its own; "
        f"give the {copy.path} the text names, or null if it names none"
    )


def _word_part(proof: Evidence, word: str) -> str:
    return (
        f"{proof.path} {proof.value} is part of the word {word!r}, not a count; give the count the text "
        "writes on its own (before ×, x, @, 点), or null if it writes none"
    )


def _prewritten(proof: Evidence, key: str) -> str:
    shown = json.dumps(proof.value, ensure_ascii=False)
    return (
        f'{proof.path} {shown} is what a JSON-like example in the text writes for "{key}", not what the '
        f"text states; give the {key} the text states, or null if it states none"
    )


def _evidence_errors(
    schema: Schema, data: dict[str, Any], source: str, formatting: Completion, meta: dict[str, Any] | None,
    bounds: Bounds, failing: set[Path], reference_field: str = "reference_date",
    earlier: frozenset[str] = frozenset(),
) -> tuple[list[Evidence], list[tuple[Path, str]], list[Held], Weights, Weights]:  # fmt: skip
    """Ground every value in the source and weigh every value's (and null's) probability: the values the
    text does not back (field errors, which a retry may fix), those held to their bounds (never
    retried), each null's probability, and each value's and null's runner-up bound (`field_rivals`).

    `bounds` is (every value's bound, enum and boolean values' bound or None for the same); a field's
    `x-min-confidence` overrides both, and a bound above 1 can never be met (an uncalibrated choice).

    A value inside a path that already failed validation is not judged again."""
    reference, anchor = anchored_reference(meta, reference_field)
    order = schema.date_order
    evidence = ground(schema.checked_body, data, source, reference, anchor=anchor, date_order=order)
    formatting = renormalised(formatting, data)  # a server's logprobs from before its mask, if any
    confidences = field_confidences(schema.checked_body, data, formatting)
    mode = logprob_mode(formatting)
    evidence = [replace(e, confidence=confidences.get(e.path), engine=formatting.engine,
                        logprob_mode=mode if e.path in confidences else "none")
                for e in evidence]  # fmt: skip

    copied = {copy.path: original for copy, original in copies(evidence, source, schema.checked_body)}
    pasted, parts = prewritten(evidence, source), word_parts(evidence, source)
    unbacked = copied.keys() | pasted.keys() | parts.keys()
    evidence = [replace(e, grounded=False) if e.path in unbacked else e for e in evidence]

    def fresh(path: Path) -> bool:
        return not any(path[:n] in failing for n in range(len(path) + 1))

    def why(proof: Evidence) -> str:
        if proof.path in copied:
            return _copied(proof, copied[proof.path])
        if proof.path in pasted:
            return _prewritten(proof, pasted[proof.path])
        if proof.path in parts:
            return _word_part(proof, parts[proof.path])
        return _ungrounded(schema, proof)

    errors = [(path, why(e)) for e in evidence if not e.grounded and fresh(path := parse_path(e.path))]
    written = {e.path for e in evidence if e.spans}  # an aliased enum's label the text writes is read
    values = {e.path: e.value for e in evidence}
    body, model = schema.checked_body, formatting.model
    nulls = field_confidences(body, data, formatting, nulls=True)
    held = [
        *held_values(
            body, data, confidences, bounds, model, written, values.get, lambda t: fresh(parse_path(t))
        ),
        *held_nulls(body, data, nulls, bounds, model, lambda t: fresh(parse_path(t))),
    ]
    already = {h.path for h in held}
    held += held_again(body, data, earlier, already, values.get, lambda t: fresh(parse_path(t)))
    rivals = field_rivals(body, data, formatting) | field_rivals(body, data, formatting, nulls=True)
    return evidence, errors, held, nulls, rivals


def judge(
    schema: Schema,
    source: str,
    reasoning: Completion,
    formatting: Completion,
    *,
    meta: dict[str, Any] | None = None,
    min_confidence: float = 0.0,
    choice_confidence: float | None = None,
    reference_field: str = "reference_date",
    earlier: frozenset[str] = frozenset(),
) -> Verdict:
    """Decide the status of one record from both passes' completions.

    `source` is the record's text and the only place a value may be found; `meta` may hold the
    `reference_date` for relative dates; `min_confidence` is the run's bound for every value's
    probability and `choice_confidence`, if given, the one for enum and boolean values (a field's
    `x-min-confidence` overrides both; 0 is off, above 1 never passes); `reference_field` names the meta
    field that holds the reference date (else a date the text states as its own is used); `earlier`
    holds the paths an earlier attempt of this record held to their bounds: they stay held (`held_again`).
    """
    try:
        data = json.loads(formatting.text)
    except json.JSONDecodeError as exc:
        reason = f"no JSON came back ({exc.msg} at character {exc.pos}; finish={formatting.finish_reason})"
        return Verdict("failed", None, [reason])
    data = read_absent(schema.checked_body, data)  # a quoted "null" says "none", as null does
    refusals = field_errors(schema, data, source)
    evidence: list[Evidence] = []
    held: list[Held] = []
    nulls: dict[str, float] = {}
    rivals: dict[str, float] = {}
    if isinstance(data, dict):
        failing = {path for path, _ in refusals}
        bounds = (min_confidence, choice_confidence)
        evidence, errors, held, nulls, rivals = _evidence_errors(
            schema, data, source, formatting, meta, bounds, failing, reference_field, earlier
        )
        refusals += errors
    rows = [e.as_row() for e in evidence]
    stops = [
        f"{name} pass stopped at {done.finish_reason} after {done.completion_tokens} tokens"
        for name, done in (("reasoning", reasoning), ("formatting", formatting))
        if done.finish_reason != "stop"
    ]
    feedback = [message for _, message in refusals]  # what a retry can fix; a bound is not told
    below = [(parse_path(h.path), h.message) for h in held if not h.null]
    failures = refusals + below
    unsure = [h.message for h in held if h.null]
    fixed, nulled = (data, [])
    if isinstance(data, dict) and failures:
        fixed, nulled = null_failures(schema, data, failures)
    if fixed is not None and failures and field_errors(schema, fixed, source):
        fixed = None  # nulling did not make it valid (a constraint across fields): never store it as partial
    null_mass = field_null_mass(schema.checked_body, data, formatting) if isinstance(data, dict) else {}
    values = judged_values(evidence, nulls, held, refusals, nulled, rivals, null_mass)
    messages = [message for _, message in failures] + unsure
    if stops or not isinstance(data, dict) or fixed is None:
        data = data if isinstance(data, dict) else None
        return Verdict("failed", data, stops + messages, feedback=feedback, evidence=rows, values=values)
    if not any(value_paths(schema.checked_body, fixed)) and not schema.body.get("x-empty-ok"):
        messages.append(
            f"{EMPTY_ROW}: every field is null, which is not an answer unless the schema's root says "
            "`x-empty-ok: true`"
        )
    verdict = Verdict("partial" if messages else "ok", fixed, messages, nulled, feedback, rows, values)
    return as_written(schema, verdict, {parse_path(path) for path in nulled})


def as_written(schema: Schema, verdict: Verdict, refused: set[Path] | None = None) -> Verdict:
    """The row as the user's own schema reads it (schemas/conform.py): grammar nulls dropped or
    defaulted, and listed in the evidence; a null the judge put there (`refused`) is never replaced by a
    default. A row that schema refuses is a bug and never stored as valid."""
    done = conform(schema, verdict.data, refused or set())
    verdict = replace(verdict, data=done.data, evidence=[*verdict.evidence, *done.evidence()])
    return (
        replace(verdict, status="failed", errors=verdict.errors + done.problems) if done.problems else verdict
    )
