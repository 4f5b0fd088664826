"""One record's life through the two passes: reason freely, format under the grammar, judge, retry.

Retries inside a run follow what went wrong, and only where a retry can fix it:
- values the text refuses (not in the text, a wrong format or validation error, a copy of another
  field): format again with those errors fed back, reusing the notes;
- a value below its confidence bound is never a reason to retry, and never part of the feedback of a
  retry another error asked for: it is nulled (the row is `partial`), or the row fails where the field
  is critical or cannot be null (tasks.confidence.bounds). Calibration measures first answers; a
  second draw, tested again, would escape the bound it measured;
- the formatting pass cut at `length`: format again with twice the budget (up to a cap), never by
  sending the truncated text back;
- the reasoning pass cut at `length`: reason again with twice the budget, unless the notes end in a
  loop (a small model repeating itself gains nothing from more tokens);
- nothing left to change (same notes, same prompt, greedy decoding): stop early;
- an engine error: no retry here; the record is failed with `retryable` set, and queued for the
  reprocessing flow only when a retry can help (a prompt too long for the context never can).
Across attempts the best verdict is kept (`calls.better`: status first, then the least confidence),
and every formatting attempt's judged values are logged with its call (`CallLog.judged`), so a reader
sees why one was kept. The text is fitted into the engines' context in tokens first (tasks.fit); a cut
text is never `ok`. Every call, retried or not, is logged as a `CallLog` and becomes a row.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import Schema
from formwork.tasks.calls import BUDGET_CAP, RANK, Caller, ExtractOptions, Outcome, better
from formwork.tasks.confidence.features import candidate_counts
from formwork.tasks.decide import decide, held_for_person
from formwork.tasks.engines.base import Completion, Engine, EngineError, Sampling
from formwork.tasks.fit import fit_source
from formwork.tasks.grounding.anchors import anchored_reference
from formwork.tasks.grounding.values import dates_compete
from formwork.tasks.long.partwise import check_whole
from formwork.tasks.long.read import read_long, whole_meta
from formwork.tasks.modes import extract_single_pass
from formwork.tasks.presets import guard, preset
from formwork.tasks.prompts import formatting_messages, reasoning_messages
from formwork.tasks.validate import Verdict, judge

logger = logging.getLogger(__name__)
NOTES_FREE = "notes-free"  # the reading of mode two-readings made from the text and field guide alone


def looping(text: str, window: int = 32) -> bool:
    """True when the text ends in a run it already wrote twice: more budget would buy more of it."""
    return len(text) >= 3 * window and text.count(text[-window:]) >= 3


def extract_record(
    record_id: int,
    text: str,
    schema: Schema,
    reasoner: Engine,
    formatter: Engine,
    options: ExtractOptions,
    meta: dict[str, Any] | None = None,
    outcome: Outcome | None = None,
    asked: tuple[str, ...] = (),
) -> Outcome:
    """Run both passes on one record, retrying as the failure asks, and return the best verdict.

    `meta` is the record's meta; its `reference_date` lets relative dates count as grounded.
    `outcome`, when given, is filled in place, so its calls survive an exception (`extract_safely`).
    `asked`: what the first formatting attempt is told was wrong before (a long text's part read
    again because it gave no items, tasks.long).
    """
    outcome = outcome or Outcome(record_id, Verdict("failed", None, ["not processed"]), attempts=0)
    if options.mode == "two-readings":
        return read_twice(record_id, text, schema, (reasoner, formatter), options, meta, outcome)
    if options.mode != "two-pass":
        return extract_single_pass(record_id, text, schema, reasoner, options, meta=meta, outcome=outcome)
    call = Caller(outcome)
    reasoning_budget = options.reasoning_max_tokens
    format_budget_now = options.format_max_tokens or format_budget(schema.grammar_body)
    notes: Completion
    feedback: list[str] = list(asked)
    redo_reasoning, cut = True, False
    try:
        fitted = fit_source(text, schema, (reasoner, formatter), reasoning_budget, format_budget_now)
        text, cap, cut = fitted.text, fitted.reasoning_cap or BUDGET_CAP, fitted.cut
        earlier: frozenset[str] = frozenset()  # paths held to their bounds so far
        for attempt in range(1, options.max_attempts + 1):
            outcome.attempts = attempt
            if redo_reasoning:
                sampling = Sampling(
                    reasoning_budget,
                    temperature=options.reasoning_temperature,
                    seed=attempt,
                    repetition_penalty=options.reasoning_repetition_penalty,
                )
                notes = call(reasoner, "reasoning", reasoning_messages(schema, text), sampling)
                reasoning_budget = min(2 * reasoning_budget, BUDGET_CAP, cap)
                grammar = options.formatting_grammar(schema, text, meta, notes.text)  # the notes order it
            messages = formatting_messages(schema, text, notes.text, feedback)
            shaping = guard(
                preset(options.preset, format_budget_now), allow_chat=options.allow_chat_in_constrained
            )
            shaped = call(formatter, "formatting", messages, shaping, grammar)
            verdict = judge(schema, text, notes, shaped, meta=meta, earlier=earlier, **options.judging())
            earlier |= verdict.held()  # held once, held in every later attempt
            outcome.calls[-1].judged = verdict.judged()
            if better(verdict, outcome.verdict):
                outcome.verdict = verdict
                outcome.reasoning_finish = notes.finish_reason
                outcome.formatting_finish = shaped.finish_reason
            if verdict.status == "ok":
                break
            redo_reasoning = notes.finish_reason == "length" and not looping(notes.text)
            if shaped.finish_reason == "length" and format_budget_now < BUDGET_CAP:
                format_budget_now, feedback = min(2 * format_budget_now, BUDGET_CAP), []
            elif verdict.feedback:
                feedback = verdict.feedback  # what a retry can fix; a value below its bound is not in it
            elif not redo_reasoning:
                break  # nothing a retry can fix (or only bounds, which are never retried)
    except EngineError as exc:
        if RANK[outcome.verdict.status] == 0:
            outcome.verdict = Verdict("failed", None, [f"engine error: {exc}"])
            outcome.retryable = outcome.queueable = exc.retryable
    outcome.settle(len(text) if cut else None)
    return outcome


def input_problem(record_id: int, problem: str) -> Outcome:
    """A record the model never sees (an empty or broken text): failed, and no retry can help it."""
    return Outcome(record_id, Verdict("failed", None, [f"bad input: {problem}"]), attempts=0, queueable=False)


def read_twice(
    record_id: int, text: str, schema: Schema, engines: tuple[Engine, Engine], options: ExtractOptions,
    meta: dict[str, Any] | None, outcome: Outcome,
) -> Outcome:  # fmt: skip
    """Mode `two-readings`: the record read without notes (the one-pass prompt, the text and the field
    guide alone), then with them (two-pass), each judged on its own; `tasks.decide` keeps each field
    from the reading that is surer of it. The notes-free reading comes first: its prompt is the
    reasoning prompt's prefix, so the reasoning call finds it in the engine's cache."""
    alone = Outcome(record_id, Verdict("failed", None, ["not processed"]), attempts=0)
    alone = extract_single_pass(record_id, text, schema, engines[0], replace(options, mode="one-pass"),
                                meta=meta, outcome=alone)  # fmt: skip
    for call in alone.calls:
        call.judged = {**(call.judged or {}), "reading": NOTES_FREE}
    try:
        extract_record(record_id, text, schema, *engines, replace(options, mode="two-pass"), meta, outcome)
    finally:
        outcome.calls[:0] = alone.calls  # paid for, and first: stored whatever happens next
    outcome.readings = {"two-pass": outcome.verdict, NOTES_FREE: alone.verdict}
    if alone.retryable and outcome.verdict.status == "failed":
        outcome.retryable = True
    return outcome


def held_to_policy(schema: Schema, text: str, meta: dict[str, Any] | None, outcome: Outcome,
                   options: ExtractOptions) -> Outcome:  # fmt: skip
    """The record's row from its readings, each value held to the run's policy (tasks.decide)."""
    if options.policy is None:
        outcome.verdict = held_for_person(outcome.verdict, text)
        return outcome
    readings = outcome.readings or {options.mode: outcome.verdict}
    reference, anchor = anchored_reference(meta, options.reference_date_field)
    offered = candidate_counts(options.formatting_grammar(schema, text, meta))
    competes = dates_compete(text, reference, anchor, schema.date_order)
    outcome.verdict = decide(schema, readings, options.policy, offered, competes, text)
    return outcome


def extract_safely(
    record_id: int,
    text: str,
    schema: Schema,
    engines: tuple[Engine, Engine],
    options: ExtractOptions,
    meta: dict[str, Any] | None = None,
) -> Outcome:
    """`extract_record` (or both readings, in mode `two-readings`), each value then held to the run's
    policy, with an unmapped fault failing this record instead of the whole batch; the model calls made
    before the fault are kept (they were paid for, and they show what happened). A long list is read
    item by item, a text too long for the context in parts (tasks.long.read), a short list whole
    against its header's closing day where the record gives no reference date, as its units would be."""
    outcome = Outcome(record_id, Verdict("failed", None, ["not processed"]), attempts=0)
    try:
        long = read_long(record_id, text, schema, engines, options, extract_record, meta, outcome)
        if long is not None:  # held to the policy over the text read: a cut text's parts, not the rest
            return held_to_policy(schema, long[1], meta, long[0], options)
        meta = whole_meta(text, schema, options, meta)
        whole = extract_record(record_id, text, schema, *engines, options, meta, outcome=outcome)
        return check_whole(schema, text, held_to_policy(schema, text, meta, whole, options))
    except Exception as exc:
        logger.exception("record %s: unexpected error", record_id)
        outcome.verdict = Verdict("failed", None, [f"internal error: {exc!r}"])
        outcome.retryable = False
        return outcome
