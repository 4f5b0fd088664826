"""A text too long for the model's context: read it in parts, each through the same pipeline, then merge.

Cutting such a text loses what stood after the cut (the line items of a long receipt, the second
expense of a statement, the signature at the bottom of a thread), and a cut text is never `ok`
(tasks/fit.py). So a text that does not fit is split on its natural units (tasks/long/parts.py), each part
is extracted as a record of its own (both passes, grounded decoding against the part's own text, the
same judge and bounds), under the part's schema (schemas/roles.py: a part may not state a header
field), and the parts' rows are merged (tasks/long/merge.py) with every span moved to where it stands in
the whole text. Each call is logged with the part it read (`judged["part"]`), so the review page and
a reader of the calls can tell the parts apart. Every part is read against the reference date the
record gives, else the latest day the text's header states (a statement's `02/05` lines need its
year). A part whose text shows table rows but that gave no items is read once more (two-pass), its
formatting pass told so; only that part, never the whole text.

The whole record is `ok` only when every part is and the merge found no conflict, and, as for any
row, only where its values are certified (tasks.decide, on the merged row). A text that needs more than
`max_parts` parts (a megabyte pasted by mistake) is read in its first `max_parts` and cut there:
the row says so and is never `ok`, and the run does not spend hundreds of calls on one record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from formwork.schemas.registry import Schema
from formwork.tasks.calls import ExtractOptions, Outcome
from formwork.tasks.engines.base import Engine
from formwork.tasks.fit import counted_engines
from formwork.tasks.long.completeness import missing_from, silent_parts
from formwork.tasks.long.merge import merge
from formwork.tasks.long.plan import Plan, part_options, part_schema, roles_of
from formwork.tasks.long.units import find_units
from formwork.tasks.validate import Verdict

PerRecord = Callable[..., Outcome]  # tasks.extract.extract_record, passed in (it dispatches here)


def finish_of(outcomes: list[Outcome], name: str) -> str | None:
    """The finish reason the record stores for pieces read apart: the first that was not `stop`."""
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
    field, order = options.reference_date_field, schema.date_order
    meta = find_units(text).reading_meta(meta, text, field, order)  # a part has no header

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
    if options.mode == "two-pass":  # a part that gave no items is read once more, told so
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
    outcome.reasoning_finish = finish_of(done, "reasoning_finish")
    outcome.formatting_finish = finish_of(done, "formatting_finish")
    outcome.settle(plan.cut_to)
    return outcome


def check_whole(schema: Schema, text: str, outcome: Outcome) -> Outcome:
    """A text read whole is checked for the table rows, e-mail-keyed items and stated total its items
    leave out, as a merged one is: a whole receipt of 64 table rows gave a 1.5B model's `ok` row with
    no items (its JSON could not hold them all). The row is then `partial` with the reason
    (tasks/long/completeness.py)."""
    roles = roles_of(schema)
    if not isinstance(outcome.verdict.data, dict) or not roles.items:
        return outcome
    for problem in missing_from(schema.body, roles, text, outcome.verdict.data):  # a failed row says it too
        outcome.verdict = outcome.verdict.capped(problem)
    return outcome
