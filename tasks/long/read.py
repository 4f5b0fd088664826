"""How a long text is read: item by item, in parts, or whole (None: the caller reads it whole).

Item by item where the text's layout shows a list of units (tasks/long/units.py) for the schema's one
list of records and the list is long enough to pay for it (`MIN_UNITS`, measured: BENCHMARKS section
34); in parts where the text does not fit one prompt, or its items' JSON one answer (tasks/long/plan.py);
whole otherwise. A schema may say what holds one item (`x-units` on its items property: "rows",
"lines", "messages"), which reads the list item by item whenever units of that kind are found, or
"none" (items named across sentences of prose), which never does. `split_long_texts = false` reads
every text whole (cut where it does not fit, never `ok`). A list of more than `max_parts` x
`UNITS_PER_PART` units (a statement of ten thousand lines) is read in that many and cut after them,
never `ok`, as a text of more than `max_parts` parts is: a record's calls stay bounded.
"""

from __future__ import annotations

from typing import Any

from formwork.schemas.annotations import value_types
from formwork.schemas.registry import Schema
from formwork.schemas.roles import item_node
from formwork.tasks.calls import ExtractOptions, Outcome
from formwork.tasks.engines.base import Engine, EngineError
from formwork.tasks.long.itemwise import extract_items
from formwork.tasks.long.partwise import PerRecord, extract_long
from formwork.tasks.long.plan import plan_parts, roles_of, splittable
from formwork.tasks.long.units import Layout, find_units

MIN_UNITS = 8  # fewer units: a list short enough to read whole (BENCHMARKS section 34)
UNITS_PER_PART = 30  # a list is read in at most max_parts x this many units: what max_parts parts hold


def units_to_read(text: str, schema: Schema, options: ExtractOptions) -> Layout | None:
    """The units `text` is read in item by item, or None where it is read in parts or whole."""
    roles = roles_of(schema)
    if not options.split_long_texts or not splittable(schema) or len(roles.items) != 1:
        return None
    name = roles.items[0]
    item = item_node(schema.body, name)
    declared = roles.units.get(name)
    if declared == "none" or not ("object" in value_types(item) or "properties" in item):
        return None  # no list of records to read one at a time
    layout = find_units(text, declared)  # type: ignore[arg-type]
    if not layout.units or (declared is None and len(layout.units) < MIN_UNITS):
        return None
    return layout.limited(options.max_parts * UNITS_PER_PART)


def whole_meta(
    text: str, schema: Schema, options: ExtractOptions, meta: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The meta a list read whole is read with, as its units would be (`Layout.reading_meta`): a short
    statement's `02/05` lines against its closing day where the record gives no reference date, else
    no date at all. A schema with no list, and a text that shows none, keep the record's meta."""
    if not roles_of(schema).items:
        return meta
    return find_units(text).reading_meta(meta, text, options.reference_date_field, schema.date_order)


def read_long(
    record_id: int, text: str, schema: Schema, engines: tuple[Engine, Engine], options: ExtractOptions,
    per_record: PerRecord, meta: dict[str, Any] | None, outcome: Outcome,
) -> tuple[Outcome, str] | None:  # fmt: skip
    """Read `text` item by item or in parts, with `per_record` (tasks.extract.extract_record) for what is
    read as a record (a part, a list's header text); None where it is read whole, by the caller.

    With the outcome comes the text it was read from, which the run's policy is then held to: a text
    cut after `max_parts` parts is merged, checked and counted over those parts only. Over the whole,
    a 2 MB line read in 8 parts took 80 s and 882 MB to build the grounded grammar the policy counts
    candidates in, for values no part could give."""
    layout = units_to_read(text, schema, options)
    if layout is not None:  # the header text stays whole (its total may stand after the cut)
        items = extract_items(record_id, text, schema, engines, options, layout, per_record, meta, outcome)
        return items, text
    try:
        plan = plan_parts(text, schema, engines, options)
    except EngineError:
        return None  # the context cannot hold the prompts: the record's own reading says so
    if len(plan.parts) > 1:
        read = text[: plan.cut_to]  # every part ends by the cut (tasks.long.plan); spans stay where they are
        return extract_long(record_id, read, schema, engines, options, plan, per_record, meta, outcome), read
    return None
