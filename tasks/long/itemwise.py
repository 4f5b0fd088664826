"""Read a list item by item: each unit that holds one item on its own, many at once, then merge.

A part of twenty lines asks a small model to hold and restate twenty items; it lists a third of them
and its JSON loops on the last (BENCHMARKS section 30). One unit asks for one item. So each unit
(tasks/long/units.py) gets one constrained call under `schemas.roles.unit_body` (the item, or null
where the unit states none), with grounded decoding against the unit's own text: a value can only
come from its own line. The prompt puts what every unit shares first (the instructions and the field
guide) and the unit last, so an engine that keeps a prompt's prefix (the embedded engine's slots,
vLLM's prefix cache) evaluates only the unit. Units go to the engine together, as many as it takes
at once. A unit the judge does not pass is read once more with a sibling unit's reading shown first
(tasks/long/examples.py), so a text's calls stay bounded by twice its units. A unit's calls are
stored like any other, with the unit they read (`judged["unit"]`, and the example's index there).

The header fields are read once, through the record's own pipeline in one pass (a run's other
single-call mode where it has one), from the text with the units taken out (`judged["header"]`),
under `schemas.roles.header_body`: its fields are copied from a few lines, and a reasoning pass
first lost them (the 1.5B's notes said "Total: null" for 4 of 7 long documents' totals).
The header and the units then merge as parts do (tasks/long/merge.py: items in text order with their
spans in the whole text, keyed by `x-key`, checked for completeness). A list cut after its first
units (tasks/long/read.py) is never `ok`. Every unit accounts for an item or a reason: a unit that
gave no item (a payment, a pending line, or an item the model missed) is vouched for only by a stated
total the items add up to; elsewhere the row names such units, and is not `ok`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import replace
from functools import partial
from typing import Any

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import Schema
from formwork.schemas.roles import header_body, unit_body
from formwork.tasks.calls import Caller, ExtractOptions, Outcome
from formwork.tasks.engines.base import Completion, Engine, EngineError, Message
from formwork.tasks.fit import fit_source
from formwork.tasks.long.completeness import INCOMPLETE, adds_up
from formwork.tasks.long.examples import (
    Example,
    kept,
    nearest_example,
    needs_second_reading,
    not_again,
    shown_first,
)
from formwork.tasks.long.merge import merge
from formwork.tasks.long.parts import Piece
from formwork.tasks.long.partwise import PerRecord, finish_of
from formwork.tasks.long.plan import roles_of
from formwork.tasks.long.units import Kind, Layout, Unit
from formwork.tasks.presets import guard, preset
from formwork.tasks.prompts import field_guide
from formwork.tasks.validate import Verdict, judge

NOUNS: dict[Kind, str] = {"rows": "table row", "lines": "line", "messages": "mail message"}
SHOWN = 6  # units named in a reason, at most
CREDIT_LEFT_OUT = "money in (a credit mark or column): the other items add up to the stated total without it"
NEWLINE = "\n"
_schemas: dict[tuple[str, str], Schema] = {}


def _derived(schema: Schema, what: str, body: dict[str, Any]) -> Schema:
    return Schema(schema.name, schema.version, body, f"{schema.source} ({what})")


def unit_schema(schema: Schema, kind: Kind) -> Schema:
    """The schema each unit of kind `kind` is read under, built once per schema and kind."""
    if (schema.digest, kind) not in _schemas:
        body = unit_body(schema.body, roles_of(schema).items[0], NOUNS[kind])
        _schemas[(schema.digest, kind)] = _derived(schema, f"one {NOUNS[kind]}", body)
    return _schemas[(schema.digest, kind)]


def header_schema(schema: Schema) -> Schema:
    """The schema a list's header text is read under, built once per schema."""
    if (schema.digest, "header") not in _schemas:
        _schemas[(schema.digest, "header")] = _derived(schema, "header", header_body(schema.body))
    return _schemas[(schema.digest, "header")]


def unit_messages(reading: Schema, kind: Kind, context: str, shown: str) -> list[Message]:
    """The prompt for one unit: what all units share first, then what is shown above the unit (its
    table's header row, its section's heading: `context`), then the unit's text (`shown`)."""
    noun, name = NOUNS[kind], next(iter(reading.properties))
    above = f"Above it in the text:\n{context}\n\n" if context else ""
    return [
        {"role": "system", "content": "You extract facts from messages into JSON."},
        {
            "role": "user",
            "content": (
                f"Fields:\n{field_guide(reading)}\n\nAnswer with one JSON object whose key {name} holds the "
                f"item this {noun} states.\n\n{above}The {noun}:\n{shown}"
            ),
        },
    ]


def _as_part(verdict: Verdict, name: str) -> Verdict:
    """A unit's verdict as a part's, which the merge reads: its item as a list of one (or none), and
    every path and reason about it as the list's first item (`expenses.amount` -> `expenses[0].amount`)."""
    about = re.compile(rf"^{re.escape(name)}(?=$|[.\[ :])")

    def moved(path: str) -> str:
        return about.sub(f"{name}[0]", path)

    data = verdict.data
    if isinstance(data, dict):
        data = {name: [] if data.get(name) is None else [data[name]]}
    return replace(
        verdict,
        data=data,
        errors=[moved(e) for e in verdict.errors],
        nulled=[moved(p) for p in verdict.nulled],
        evidence=[{**row, "path": moved(row["path"])} for row in verdict.evidence],
        values=[{**row, "path": moved(row["path"])} for row in verdict.values],
    )


def _read_unit(
    record_id: int, index: int, layout: Layout, text: str, schema: Schema, engine: Engine,
    options: ExtractOptions, meta: dict[str, Any] | None, example: Example | None = None,
    first: Verdict | None = None,
) -> tuple[Outcome, Message | None]:  # fmt: skip
    """One unit's one constrained call, judged against the unit's own text (a second reading shows
    `example` first and is not offered what the judge refused in the `first`, tasks/long/examples.py);
    with the message that asked for the unit (None where the engine could not be asked)."""
    assert layout.kind is not None
    unit, reading = layout.units[index], unit_schema(schema, layout.kind)
    source = unit.text(text)
    outcome = Outcome(record_id, Verdict("failed", None, ["not processed"]), attempts=1)
    asked: Message | None = None
    budget = options.format_max_tokens or format_budget(reading.grammar_body)
    sampling = guard(preset(options.preset, budget), allow_chat=options.allow_chat_in_constrained)
    try:
        fitted = fit_source(source, reading, (engine,), 0, budget)  # a message may be long
        grammar = options.formatting_grammar(reading, fitted.text, meta, dates_in=unit.dates_in)
        grammar = not_again(grammar, first) if first else grammar
        messages = unit_messages(reading, layout.kind, unit.context, fitted.text)
        asked = messages[1]
        shown = shown_first(example, messages) if example else messages
        done = Caller(outcome)(engine, "formatting", shown, sampling, grammar)
        no_reasoning = Completion("", "stop", 0, 0, 0.0, engine.model)
        outcome.verdict = judge(reading, fitted.text, no_reasoning, done, meta=meta, **options.judging())
        outcome.formatting_finish = done.finish_reason
        outcome.settle(len(fitted.text) if fitted.cut else None)
    except EngineError as exc:
        outcome.verdict = Verdict("failed", None, [f"engine error: {exc}"])
        outcome.retryable, outcome.queueable = exc.retryable, exc.retryable
    where = {"index": index + 1, "of": len(layout.units), "span": [unit.start, unit.end], "kind": layout.kind}
    if example:
        where["example"] = example.index + 1
    for call in outcome.calls:
        call.judged = {**outcome.verdict.judged(), "unit": where}
    return outcome, asked


def _unread(name: str, read: list[tuple[str, Unit, Verdict]], text: str) -> list[str]:
    """The units that gave no item, each named with its first line: each unit accounts for an item or
    a stated reason, and where no stated total vouches for them, this is the reason the row gives."""
    empty = [
        f"{label} ({unit.text(text).split(NEWLINE)[0].strip()[:60]!r})"
        for label, unit, verdict in read
        if isinstance(verdict.data, dict) and not verdict.data.get(name)
    ]
    if not empty:
        return []
    more = f" and {len(empty) - SHOWN} more" if len(empty) > SHOWN else ""
    return [f"{INCOMPLETE} {len(empty)} units gave no item: {'; '.join(empty[:SHOWN])}{more}"]


def _in_context(pool: ThreadPoolExecutor) -> Callable[..., Future]:
    """`pool.submit` run in the caller's context: the record's keeper of answered calls
    (tasks.calls.ANSWERS) goes with each unit, so every unit's call is stored as it is answered."""

    def submit(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        return pool.submit(copy_context().run, function, *args, **kwargs)

    return submit


def extract_items(
    record_id: int, text: str, schema: Schema, engines: tuple[Engine, Engine], options: ExtractOptions,
    layout: Layout, per_record: PerRecord, meta: dict[str, Any] | None, outcome: Outcome,
) -> Outcome:  # fmt: skip
    """Read the header text once and every unit of `layout` on its own, merge, and settle the row."""
    roles, units = roles_of(schema), layout.units
    name = roles.items[0]
    workers = max(1, min(engine.max_concurrency for engine in engines))
    with ThreadPoolExecutor(workers, thread_name_prefix="formwork-unit") as threads:
        submit = _in_context(threads)
        header = None
        if roles.headers:
            # vouched once, for the whole; one call, as the units are: a few lines' fields are copied,
            # and the 1.5B's notes on them dropped 4 of 7 totals (BENCHMARKS section 34)
            mode = "one-pass" if options.mode in ("two-pass", "two-readings") else options.mode
            each = replace(options, policy=None, mode=mode)
            shown = layout.header.text(text)
            header = submit(per_record, record_id, shown, header_schema(schema), *engines, each, meta)
        each_unit = layout.reading_meta(meta, text, options.reference_date_field, schema.date_order)
        unit = partial(_read_unit, record_id, layout=layout, text=text, schema=schema, engine=engines[0],
                       options=options, meta=each_unit)  # fmt: skip
        results = [future.result() for future in [submit(unit, i) for i in range(len(units))]]
        read, asked = [o for o, _ in results], [m for _, m in results]
        wanted = [i for i, o in enumerate(read) if needs_second_reading(o)]
        examples = {i: nearest_example(i, read, asked, name) for i in wanted}
        again = {
            i: submit(unit, i, example=e, first=read[i].verdict) for i, e in examples.items() if e is not None
        }
        for i, second in again.items():
            read[i] = kept(read[i], second.result()[0], name)
        done = ([header.result()] if header else []) + read
    if header:
        for call in done[0].calls:
            call.judged = {**(call.judged or {}), "header": {"spans": [list(s) for s in layout.header.spans]}}
    for got in done:
        outcome.calls += got.calls
    outcome.attempts = max(o.attempts for o in done)
    failed = next((o for o in done if o.retryable), None)
    if failed:  # the engine failed: the whole record is retried, not a merge of the rest
        outcome.verdict, outcome.retryable, outcome.queueable = failed.verdict, True, failed.queueable
        return outcome
    names = [f"unit {i + 1} of {len(units)}" for i in range(len(units))]
    verdicts = [_as_part(o.verdict, name) for o in read]
    pieces: list[tuple[Piece, Verdict]] = list(zip(units, verdicts, strict=True))
    if header:
        pieces, names = [(layout.header, done[0].verdict), *pieces], ["the header text", *names]
    merged = merge(schema, roles, text, pieces, names).verdict
    checked = adds_up(schema.body, roles, merged.data, text) if isinstance(merged.data, dict) else None
    credits = [i for i, (unit, verdict) in enumerate(zip(units, verdicts, strict=True))
               if unit.credit and isinstance(verdict.data, dict) and verdict.data.get(name)]  # fmt: skip
    if credits and checked is not None and not checked.agrees:
        # money in read as an item: left out only where the other items then add up to the total
        emptied = [replace(v, data={name: []}, evidence=[], values=[]) if i in credits else v
                   for i, v in enumerate(verdicts)]  # fmt: skip
        without = [*pieces[: len(pieces) - len(units)], *zip(units, emptied, strict=True)]
        other = merge(schema, roles, text, without, names).verdict
        other_sum = adds_up(schema.body, roles, other.data, text) if isinstance(other.data, dict) else None
        if other_sum is not None and other_sum.agrees:
            merged, checked, verdicts = other, other_sum, emptied
            for i in credits:
                for call in read[i].calls:
                    call.judged["unit"]["left_out"] = CREDIT_LEFT_OUT
    if checked is None or not checked.agrees:  # no total vouches for the units that gave no item
        for reason in _unread(name, list(zip(names[-len(units) :], units, verdicts, strict=True)), text):
            merged = merged.capped(reason)
    outcome.verdict = merged
    outcome.reasoning_finish = finish_of(done, "reasoning_finish")
    outcome.formatting_finish = finish_of(done, "formatting_finish")
    outcome.settle(layout.cut_to)
    return outcome
