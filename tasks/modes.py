"""The single-call modes that `two-pass` is measured against, judged exactly like production rows.

- `one-pass`: one schema-constrained call, the answer first (no room to think);
- `one-pass-reasoning`: one constrained call whose schema gets a `reasoning` string as its first field,
  so the model may think inside the JSON; the field is dropped before validation;
- `prompt-json`: no grammar at all; the prompt asks for JSON and the parsing ladder (tasks/parsing.py)
  digs it out; the step that worked is kept with each call (`parse_step`, stored in `model_calls`).

Each mode uses the run's main (reasoning) model for its one call, logs it as the `formatting` pass
(the call that wrote the JSON), retries like the two-pass pipeline (the errors a retry can fix fed
back, a `length` stop given twice the budget, no retry when nothing would change, never a retry for a
value below its confidence bound, even when sampling could draw another), keeps the best attempt and
logs each one's judged values the same way, and returns the same `Outcome`, so statuses, storage and
the retry queue behave the same whatever the mode. A cut text is never `ok` here either.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import Schema
from formwork.tasks.calls import BUDGET_CAP, RANK, Caller, ExtractOptions, Outcome, better
from formwork.tasks.engines.base import Completion, Engine, EngineError, Message, Sampling
from formwork.tasks.fit import fit_source
from formwork.tasks.parsing import parse_ladder
from formwork.tasks.presets import guard, preset
from formwork.tasks.prompts import reading_messages
from formwork.tasks.validate import Verdict, judge

MODES = ("two-pass", "one-pass", "one-pass-reasoning", "prompt-json", "two-readings")
SINGLE = ("one-pass", "one-pass-reasoning", "prompt-json")  # one call writes the JSON
REASONING_FIELD = "reasoning"
REASONING_MAX_CHARS = 400


def with_reasoning_field(body: dict[str, Any]) -> dict[str, Any]:
    """The schema with a bounded free `reasoning` string put first, so thinking comes before answers."""
    extended = copy.deepcopy(body)
    extended["properties"] = {
        REASONING_FIELD: {
            "type": "string",
            "maxLength": REASONING_MAX_CHARS,
            "description": "Think step by step: quote the text and work out each field before answering.",
        },
        **body.get("properties", {}),
    }
    extended["required"] = [REASONING_FIELD, *body.get("required", [])]
    return extended


def single_pass_messages(schema: Schema, text: str, mode: str) -> list[Message]:
    """The one prompt of a single-pass mode: the text and the field guide as every reading opens
    (tasks.prompts.reading_messages, so two readings of a record share their prefix), then how to answer."""
    keys = ", ".join(([REASONING_FIELD] if mode == "one-pass-reasoning" else []) + list(schema.properties))
    ask = f"Answer with one JSON object with exactly these keys: {keys}. Use null when the text does not say."
    if mode == "one-pass-reasoning":
        ask += f" Use `{REASONING_FIELD}` first to quote the text and think; then fill the fields."
    if mode == "prompt-json":
        ask += " Write only the JSON object: no prose, no code fences."
    return reading_messages(schema, text, ask)


def _as_answer(done: Completion, mode: str) -> tuple[Completion, str | None]:
    """The completion as the validator should see it (clean JSON of the schema's own fields), and the
    parsing-ladder step for prompt-json. Unparseable text is passed on unchanged: judged `no JSON`."""
    if mode == "prompt-json":
        found, step = parse_ladder(done.text)
        return (replace(done, text=json.dumps(found)) if found is not None else done), step
    if mode == "one-pass-reasoning":
        try:
            data = json.loads(done.text)
        except json.JSONDecodeError:
            return done, None
        if isinstance(data, dict):
            data.pop(REASONING_FIELD, None)
            return replace(done, text=json.dumps(data)), None
    return done, None


def extract_single_pass(
    record_id: int,
    text: str,
    schema: Schema,
    engine: Engine,
    options: ExtractOptions,
    sampling: Sampling | None = None,
    meta: dict[str, Any] | None = None,
    outcome: Outcome | None = None,
) -> Outcome:
    """Run one single-call mode on one record; `sampling` overrides the preset (for ablations).

    `meta` is the record's meta (its `reference_date` grounds relative dates), as in two-pass."""
    mode = options.mode
    if mode not in SINGLE:
        raise ValueError(f"mode {mode!r} is not a single-pass mode: use one of {', '.join(SINGLE)}")
    body = with_reasoning_field(schema.grammar_body) if mode == "one-pass-reasoning" else schema.grammar_body
    free_budget = options.reasoning_max_tokens  # no grammar: the answer may come wrapped in prose
    budget = options.format_max_tokens or (free_budget if mode == "prompt-json" else format_budget(body))
    base = sampling or preset(options.preset, budget)
    outcome = outcome or Outcome(record_id, Verdict("failed", None, ["not processed"]), attempts=0)
    call = Caller(outcome)
    no_reasoning = Completion("", "stop", 0, 0, 0.0, engine.model)  # this mode has no separate pass
    cut = False
    try:
        fitted = fit_source(text, schema, (engine,), free_budget, budget)
        text, cut = fitted.text, fitted.cut
        messages = single_pass_messages(schema, text, mode)
        constraint = None if mode == "prompt-json" else options.formatting_grammar(schema, text, meta)
        if mode == "one-pass-reasoning" and constraint is not None:
            constraint = with_reasoning_field(constraint)
        earlier: frozenset[str] = frozenset()  # paths held to their bounds so far
        for attempt in range(1, options.max_attempts + 1):
            outcome.attempts = attempt
            chosen = replace(base, max_tokens=budget, seed=attempt if base.temperature > 0 else base.seed)
            if constraint is not None:
                chosen = guard(chosen, allow_chat=options.allow_chat_in_constrained)
            done = call(engine, "formatting", messages, chosen, constraint)
            answer, step = _as_answer(done, mode)
            outcome.calls[-1].parse_step = step
            verdict = judge(
                schema, text, no_reasoning, answer, meta=meta, earlier=earlier, **options.judging()
            )
            earlier |= verdict.held()  # held once, held in every later attempt
            outcome.calls[-1].judged = verdict.judged()
            if better(verdict, outcome.verdict):
                outcome.verdict, outcome.formatting_finish = verdict, done.finish_reason
            if verdict.status == "ok":
                break
            if done.finish_reason == "length" and budget < BUDGET_CAP:
                budget = min(2 * budget, BUDGET_CAP)
            elif verdict.feedback:
                rejected = "Your answer was rejected:\n" + "\n".join(f"- {f}" for f in verdict.feedback)
                again = {"role": "user", "content": rejected + "\nAnswer again with the whole JSON object."}
                retry = [*messages[:2], {"role": "assistant", "content": done.text}, again]
                if retry == messages and chosen.temperature == 0:
                    break  # the same answer, rejected for the same reasons: greedy would repeat it
                messages = retry
            elif chosen.temperature == 0 or verdict.data is not None:
                break  # greedy would repeat itself; and a judged row with nothing to tell is held to its
                # bounds, which another draw must not escape
    except EngineError as exc:
        if RANK[outcome.verdict.status] == 0:
            outcome.verdict = Verdict("failed", None, [f"engine error: {exc}"])
            outcome.retryable = exc.retryable
    outcome.settle(len(text) if cut else None)
    return outcome
