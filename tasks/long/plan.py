"""How a long text is read: the parts it is split into (when it does not fit one prompt), the schema
each part is read under, and the options each part is read with.

A part must leave the context room for the prompts and both budgets (tasks/fit.py); where the schema
has items, the formatting budget must also hold their JSON, which restates every item with its keys.
A text that needs more than `max_parts` parts (a megabyte pasted by mistake) is read in its first
`max_parts` and cut there: the row says so and is never `ok`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import Schema
from formwork.schemas.roles import Roles, item_node, part_body, schema_roles
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines.base import Engine, RequestRejected
from formwork.tasks.fit import count_tokens, counted_engines, source_room
from formwork.tasks.long.parts import Part, split_text
from formwork.tasks.prompts import MAX_SOURCE_CHARS

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
    """The options a part is read with: held to the run's policy once, for the whole (so no policy here,
    and one reading, two-pass, in mode `two-readings`); where the schema has items, a
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

    Counting is a server round trip on vLLM or an openai server, so a plan counts as little as it
    can: bytes decide where they can, a piece is counted once, parts grow by doubling then halving
    (tasks/long/parts.py), and planning stops at `max_parts` parts. It used to split the whole text
    first: 10,037 counts for a 710 KB statement of which 8 parts were read; now 49 (BENCHMARKS 34).
    """
    whole = Plan([Part(0, len(text))])
    if not options.split_long_texts or not splittable(schema):
        return whole
    counted = counted_engines(engines)
    items = bool(roles_of(schema).items)
    skeleton, per_item = (_skeleton(schema) if items else ""), list[int]()
    counts: dict[str, int] = {}

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
            if piece not in counts:  # a piece is counted once a plan (a server round trip each)
                counts[piece] = count_tokens(counted, piece)
            tokens = counts[piece]
            if not items:
                return tokens <= room
            if not per_item:  # counted once a plan, and only when bytes cannot decide
                per_item.append(count_tokens(counted, skeleton))
            return tokens <= room and tokens + listed * per_item[0] <= json_room

        return fits

    if fitting(schema, options.reasoning_max_tokens)(text):  # the usual case, decided by bytes
        return whole
    reasoning = part_options(schema, options, counted).reasoning_max_tokens
    parts = split_text(text, fitting(part_schema(schema), reasoning), options.max_parts)
    return Plan(parts, parts[-1].end if parts[-1].end < len(text) else None)
