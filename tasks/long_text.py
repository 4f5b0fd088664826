"""A text too long for the model's context: read it in parts, each through the same pipeline, then merge.

Cutting such a text loses what stood after the cut (the line items of a long receipt, the second
expense of a statement, the signature at the bottom of a thread), and a cut text is never `ok`
(tasks/fit.py). So a text that does not fit is split on its natural units (tasks/split.py), each part
is extracted as a record of its own (both passes, grounded decoding against the part's own text, the
same judge and bounds), under the part's schema (schemas/roles.py: a part may not state a header
field), and the parts' rows are merged (tasks/merge.py) with every span moved to where it stands in
the whole text. Each call is logged with the part it read (`judged["part"]`), so the review page and
a reader of the calls can tell the parts apart. A part whose text shows table rows but that gave no
items is read once more (two-pass), its formatting pass told so; only that part, never the whole text.

The whole record is `ok` only when every part is and the merge found no conflict, and, as for any
row, only where its values are certified (tasks.decide, on the merged row). A text that needs more than
`max_parts` parts (a megabyte pasted by mistake) is read in its first `max_parts` and cut there:
the row says so and is never `ok`, and the run does not spend hundreds of calls on one record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import Schema
from formwork.schemas.roles import Roles, item_node, part_body, schema_roles
from formwork.tasks.calls import ExtractOptions, Outcome
from formwork.tasks.completeness import missing_keys, missing_rows, silent_parts
from formwork.tasks.engines.base import Engine, RequestRejected
from formwork.tasks.fit import count_tokens, counted_engines, source_room
from formwork.tasks.merge import merge
from formwork.tasks.prompts import MAX_SOURCE_CHARS
from formwork.tasks.split import Part, split_text
from formwork.tasks.validate import Verdict

PerRecord = Callable[..., Outcome]  # tasks.extract.extract_record, passed in (it dispatches here)
_part_schemas: dict[str, Schema] = {}
_roles: dict[str, Roles] = {}


def part_schema(schema: Schema) -> Schema:
    """The schema each part is read under (`schemas.roles.part_body`), built once per schema."""
    if schema.digest not in _part_schemas:
        body = part_body(schema.body)
        _part_schemas[schema.digest] = Schema(schema.name, schema.version, body, f"{schema.source} (part)")
    return _part_schemas[schema.digest]


def roles_of(schema: Schema) -> Roles:
    """`schemas.roles.schema_roles`, worked out once per schema, not per record."""
    if schema.digest not in _roles:
        _roles[schema.digest] = schema_roles(schema.body)
    return _roles[schema.digest]


def part_options(schema: Schema, options: ExtractOptions, counted: list[Engine]) -> ExtractOptions:
    """The options a part is read with: held to the run's policy once, for the whole (so no policy, and
    one reading, two-pass, in mode `two-readings`); where the schema has items, a
    reasoning budget as large as the formatting budget (where the context holds it), because the
    reasoning restates every item the part reads. With the configured 384 tokens a 1.5B model listed
    10 of a part's 21 receipt lines, and its JSON then looped on the last two until `length`."""
    mode = "two-pass" if options.mode == "two-readings" else options.mode
    each = replace(options, policy=None, mode=mode)
    if not roles_of(schema).items:
        return each
    reading = part_schema(schema)
    formatting = options.format_max_tokens or format_budget(reading.grammar_body)
    longer = replace(each, reasoning_max_tokens=max(options.reasoning_max_tokens, formatting))
    try:
        if counted:
            source_room(reading, counted, longer.reasoning_max_tokens, formatting)
    except RequestRejected:
        return each  # a small context: the configured budget, and smaller parts
    return longer


def splittable(schema: Schema) -> bool:
    """Only an object schema with properties merges field by field (a bare array root does not)."""
    return schema.body.get("type") == "object" and bool(schema.body.get("properties"))


@dataclass(frozen=True)
class Plan:
    """The parts a text is read in, and where it was cut when it needed more than `max_parts`."""

    parts: list[Part]
    cut_to: int | None = None


def _skeleton(schema: Schema) -> str:
    """The JSON an item restates beside its values (its keys, quotes and commas), for the longest
    item of the schema's items fields: what each listed line costs the formatting pass."""
    keys = [item_node(schema.body, name).get("properties") or {} for name in roles_of(schema).items]
    return max((json.dumps(dict.fromkeys(k)) + ", " for k in keys), key=len, default="null, ")


def _listed(piece: str) -> int:
    """Lines that may each be an item: those with a digit (a price, a quantity, a date, a phone)."""
    return sum(1 for line in piece.split("\n") if any(c.isdigit() for c in line))


def plan_parts(text: str, schema: Schema, engines: tuple[Engine, Engine], options: ExtractOptions) -> Plan:
    """The parts `text` is read in: one when it fits the engines' context (or cannot be split).

    A part must leave the context room for the prompts and both budgets (`part_options`, tasks/fit.py);
    where the schema has items, the formatting budget must also hold their JSON, which restates every
    item with its keys: the part's tokens plus an item's keys for each line that may be an item, within
    nine tenths of the budget. (Half the budget, the rule before, let a 1.5B model's JSON for 33 lines
    of a Japanese receipt run past 1,024 tokens: CJK values are few tokens, the keys are not.)
    """
    whole = Plan([Part(0, len(text))])
    if not options.split_long_texts or not splittable(schema):
        return whole
    counted = counted_engines(engines)
    items = bool(roles_of(schema).items)
    skeleton, per_item = (_skeleton(schema) if items else ""), list[int]()

    def fitting(read_as: Schema, reasoning: int) -> Callable[[str], bool]:
        formatting = options.format_max_tokens or format_budget(read_as.grammar_body)
        room = source_room(read_as, counted, reasoning, formatting)[1] if counted else 0
        json_room = formatting * 9 // 10

        def fits(piece: str) -> bool:
            if len(piece) > MAX_SOURCE_CHARS:
                return False
            if not counted:
                return True
            listed = _listed(piece) if items else 0
            size = len(piece.encode("utf-8"))  # a token is at least one byte: most texts fit uncounted
            if size <= room and (not items or size + listed * len(skeleton.encode()) <= json_room):
                return True
            tokens = count_tokens(counted, piece)
            if not items:
                return tokens <= room
            if not per_item:  # counted once a plan, and only when bytes cannot decide
                per_item.append(count_tokens(counted, skeleton))
            return tokens <= room and tokens + listed * per_item[0] <= json_room

        return fits

    if fitting(schema, options.reasoning_max_tokens)(text):  # the usual case, decided by bytes
        return whole
    reasoning = part_options(schema, options, counted).reasoning_max_tokens
    parts = split_text(text, fitting(part_schema(schema), reasoning))
    if len(parts) > options.max_parts:
        return Plan(parts[: options.max_parts], parts[options.max_parts - 1].end)
    return Plan(parts)


def _finish(outcomes: list[Outcome], name: str) -> str | None:
    finishes = [getattr(o, name) for o in outcomes]
    return next((f for f in finishes if f not in ("stop", None)), finishes[-1] if finishes else None)


def extract_long(
    record_id: int, text: str, schema: Schema, engines: tuple[Engine, Engine], options: ExtractOptions,
    plan: Plan, per_record: PerRecord, meta: dict[str, Any] | None = None, outcome: Outcome | None = None,
) -> Outcome:  # fmt: skip
    """Extract each part with `per_record`, merge, and settle the whole record's verdict (a text that
    needed more than `max_parts` parts is cut after the last, and is never `ok`)."""
    parts = plan.parts
    outcome = outcome or Outcome(record_id, Verdict("failed", None, ["not processed"]), attempts=0)
    reading, each = part_schema(schema), part_options(schema, options, counted_engines(engines))
    roles = roles_of(schema)

    def read(index: int, asked: tuple[str, ...] = ()) -> Outcome:
        part = parts[index]
        got = per_record(record_id, part.text(text), reading, *engines, each, meta, asked=asked)
        where = {"index": index + 1, "of": len(parts), "span": [part.start, part.end]}
        for call in got.calls:
            call.judged = {**(call.judged or {}), "part": where | ({"again": True} if asked else {})}
        outcome.calls += got.calls
        return got

    done: list[Outcome] = []
    for index in range(len(parts)):
        done.append(read(index))
        if done[-1].retryable:  # the engine failed: the whole record is retried, not a merge of the rest
            outcome.verdict, outcome.retryable, outcome.queueable = done[-1].verdict, True, done[-1].queueable
            outcome.attempts = max(o.attempts for o in done)
            return outcome
    judged = [(part, got.verdict) for part, got in zip(parts, done, strict=True)]
    if each.mode == "two-pass":  # a part that gave no items is read once more, told so
        for index, shown in silent_parts(roles, text, judged):
            again = read(
                index, (f"this text shows {shown} table rows and the answer gave no items; list them",)
            )
            data = again.verdict.data if isinstance(again.verdict.data, dict) else {}
            if again.verdict.status != "failed" and any(data.get(name) for name in roles.items):
                done[index], judged[index] = again, (parts[index], again.verdict)
    merged = merge(schema, roles, text, judged)
    outcome.verdict = merged.verdict
    outcome.attempts = max(o.attempts for o in done)
    outcome.reasoning_finish = _finish(done, "reasoning_finish")
    outcome.formatting_finish = _finish(done, "formatting_finish")
    outcome.settle(plan.cut_to)
    return outcome


def check_whole(schema: Schema, text: str, outcome: Outcome) -> Outcome:
    """A text read whole is checked for the table rows and e-mail-keyed items its items leave out, as
    a merged one is: a whole receipt of 64 table rows gave a 1.5B model's `ok` row with no items (its
    JSON could not hold them all). The row is then `partial` with the reason (tasks/completeness.py)."""
    verdict, roles = outcome.verdict, roles_of(schema)
    if verdict.status == "failed" or not isinstance(verdict.data, dict) or not roles.items:
        return outcome
    problems = missing_rows(schema.body, roles, text, verdict.data)
    problems += missing_keys(schema.body, roles, text, verdict.data)
    if problems:
        outcome.verdict = replace(verdict, status="partial", errors=[*verdict.errors, *problems])
    return outcome
