"""A second reading for a unit the judge would not pass, with a sibling's reading shown first.

Units of one list share their layout: the lines of a statement, the messages of a thread. Where a
small model misreads one of them (the 1.5B gave a Japanese thread's fifth sender as her company, with
no address, while it read the four messages around it right), the same prompt gives the same answer,
but shown one sibling unit and the item read from it first, it reads the unit as it read the sibling
(BENCHMARKS section 39). Grounded decoding keeps the example's values out of the answer: every value
still comes from the unit's own text, and the judge checks it there. Nor is a value the judge refused
in the first reading offered again (the 1.5B read `納豆　３パック` with its `２コ×単８８` line as 3
packs twice; the judge refused 3 twice): the same prompt would give it again.

The example is the nearest unit before (else after) whose reading the judge passed with an item; a
second reading replaces the first only where the judge passes it and it still gives an item where
the first did, so it can mend a refusal and never add one, nor drop an item. A text's calls stay
bounded: at most two per unit.
"""

from __future__ import annotations

import copy
import itertools
import json
from dataclasses import dataclass
from typing import Any

from formwork.schemas.walk import walk
from formwork.tasks.calls import Outcome
from formwork.tasks.confidence.readings import field_key
from formwork.tasks.engines.base import Message
from formwork.tasks.validate import Verdict


@dataclass(frozen=True)
class Example:
    """A sibling unit as the prompt shows it (`asked`: its user message) and the answer read from it."""

    index: int
    asked: Message
    answer: str


def needs_second_reading(outcome: Outcome) -> bool:
    """Whether a unit's reading is one a second reading may mend: judged, and not passed."""
    return not outcome.retryable and outcome.verdict.status != "ok" and outcome.verdict.data is not None


def nearest_example(
    index: int, read: list[Outcome], asked: list[Message | None], name: str
) -> Example | None:
    """The nearest sibling of unit `index` read with an item the judge passed, before it first."""
    order = [*range(index - 1, -1, -1), *range(index + 1, len(read))]
    for other in order:
        verdict, question = read[other].verdict, asked[other]
        if verdict.status == "ok" and _item(read[other], name) and question is not None:
            answer = json.dumps({name: verdict.data[name]}, ensure_ascii=False)
            return Example(other, question, answer)
    return None


def shown_first(example: Example, messages: list[Message]) -> list[Message]:
    """`messages` (a system message, then the unit's) with the example's question and answer between."""
    return [*messages[:1], example.asked, {"role": "assistant", "content": example.answer}, *messages[1:]]


def not_again(grammar: dict[str, Any], first: Verdict) -> dict[str, Any]:
    """`grammar` (grounded: each field an enum of its candidates) without what the `first` reading
    shows a field is not: the values the judge refused there, and the values its sibling fields kept
    (one number backs one field: offered neither 3 from `３パック` nor the line's price, the 1.5B
    gave the price as the count), where the field keeps another candidate or null to choose."""
    rows = [(field_key(row["path"]), row) for row in first.values if row["value"] is not None]
    taken: dict[str, set[tuple[type, Any]]] = {
        field: set() for field, row in rows if row["verdict"] == "refused"
    }
    for field, row in rows:
        for wrong in taken:
            if field == wrong or (row["verdict"] == "passed" and _parent(field) == _parent(wrong)):
                taken[wrong].add((type(row["value"]), row["value"]))
    if not taken:
        return grammar
    narrowed = copy.deepcopy(grammar)
    for pointer, node in walk(narrowed):
        if (field := _field_at(pointer)) in taken and "enum" in node:
            left = [value for value in node["enum"] if (type(value), value) not in taken[field]]
            node["enum"] = left or node["enum"]
    return narrowed


def _field_at(pointer: str) -> str:
    """The field a grammar node at JSON `pointer` holds, as `field_key` writes it: `/properties/items/
    items/properties/amount` is `items[].amount` (an `anyOf` branch is the same field)."""
    keys, field = pointer.split("/"), ""
    for key, name in itertools.pairwise(keys):
        if key == "properties":
            field += f".{name}" if field else name
        elif name == "items" and key != "properties":
            field += "[]"
    return field


def _parent(field: str) -> str:
    return field.rpartition(".")[0]


def _item(outcome: Outcome, name: str) -> bool:
    return isinstance(outcome.verdict.data, dict) and bool(outcome.verdict.data.get(name))


def kept(first: Outcome, second: Outcome, name: str) -> Outcome:
    """The reading a unit keeps: the second where the judge passed it and it keeps the item the first
    gave (a unit read as no item at all loses what the first read), else the first; both calls kept."""
    mends = second.verdict.status == "ok" and (_item(second, name) or not _item(first, name))
    chosen = second if mends else first
    chosen.calls = [*first.calls, *second.calls]
    chosen.attempts = max(first.attempts, second.attempts)
    return chosen
