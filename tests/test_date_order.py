"""`x-date-order`: a date whose digits leave the order open is read, offered and accepted only in the
order the schema states; a date the text settles is read as written whatever is stated."""

from __future__ import annotations

import json
from datetime import date

import pytest

from formwork.schemas.annotations import grounding_problems
from formwork.schemas.registry import SchemaProblem, schema_from_body
from formwork.schemas.roles import unit_body
from formwork.tasks.engines.base import Completion
from formwork.tasks.grounding.candidates import grounded_body
from formwork.tasks.grounding.dates import numeric_readings
from formwork.tasks.grounding.values import ValueFinder, record_values
from formwork.tasks.validate import judge

BODY = {
    "title": "till_slip",
    "type": "object",
    "properties": {
        "date": {"type": ["string", "null"], "format": "date", "description": "The day of the purchase."},
        "total": {"type": ["number", "null"], "description": "The total paid."},
    },
    "required": ["date", "total"],
    "additionalProperties": False,
}
OPEN = "KEDAI RUNCIT\nDATE: 03/06/2024 14:02\nTOTAL RM 12.50"


def test_an_open_date_is_read_both_ways_each_marked_with_its_order() -> None:
    readings = {(r.value, r.order) for r in numeric_readings(OPEN)}
    assert readings == {(date(2024, 6, 3), "day-first"), (date(2024, 3, 6), "month-first")}


@pytest.mark.parametrize("text", ["25/06/2024", "06/25/2024", "03/03/2024", "2024-03-06"])
def test_a_date_the_text_settles_carries_no_order(text: str) -> None:
    assert [r.order for r in numeric_readings(text)] == [None]


def test_a_stated_order_keeps_only_its_reading_of_an_open_date() -> None:
    day_first, month_first, either = (ValueFinder(OPEN, order=o) for o in ("day-first", "month-first", None))
    assert day_first.date("2024-06-03") and month_first.date("2024-03-06")
    assert day_first.date("2024-03-06") is None
    assert month_first.date("2024-06-03") is None
    assert either.date("2024-03-06") and either.date("2024-06-03")  # no order stated: either


def test_a_date_the_text_settles_is_found_against_the_stated_order() -> None:
    finder = ValueFinder("Paid on 12/25/2024, thanks", order="day-first")
    assert finder.date("2024-12-25") is not None


def test_the_grammar_offers_an_open_date_only_in_the_stated_order() -> None:
    offered = grounded_body(BODY, OPEN, date_order="day-first")["properties"]["date"]["enum"]
    assert "2024-06-03" in offered and "2024-03-06" not in offered
    either = grounded_body(BODY, OPEN)["properties"]["date"]["enum"]
    assert {"2024-06-03", "2024-03-06"} <= set(either)


def _judged(body: dict, answer: dict, text: str = OPEN):
    schema = schema_from_body(body, "till_slip.json")
    written = json.dumps(answer)
    notes = Completion("notes", "stop", 1, 1, 0.0, "test")
    return judge(schema, text, notes, Completion(written, "stop", 1, 1, 0.0, "test", ((written, 0.0),)))


def test_the_judge_refuses_the_other_reading_of_an_open_date() -> None:
    stated = {**BODY, "x-date-order": "day-first"}
    right = _judged(stated, {"date": "2024-06-03", "total": 12.5})
    swapped = _judged(stated, {"date": "2024-03-06", "total": 12.5})
    unstated = _judged(BODY, {"date": "2024-03-06", "total": 12.5})
    assert right.status == "ok" and right.data["date"] == "2024-06-03"
    assert swapped.status != "ok" and swapped.data["date"] is None
    assert unstated.status == "ok"  # without a stated order the text backs either reading


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({**BODY, "x-date-order": "dmy"}, "(root): x-date-order is day-first or month-first"),
        (
            {**BODY, "properties": {**BODY["properties"], "date": {**BODY["properties"]["date"],
                                                                   "x-date-order": "day-first"}}},
            "date: x-date-order is day-first or month-first",
        ),
    ],
)  # fmt: skip
def test_an_order_that_cannot_apply_is_refused_with_what_to_write(body: dict, problem: str) -> None:
    assert any(p.startswith(problem) for p in grounding_problems(body))
    with pytest.raises(SchemaProblem, match="x-date-order"):
        schema_from_body(body, "till_slip.json")


def test_a_list_read_unit_by_unit_keeps_the_order() -> None:
    body = {
        **BODY,
        "x-date-order": "month-first",
        "properties": {"items": {"type": "array", "items": BODY["properties"]["date"], "description": "Ds."}},
        "required": ["items"],
    }
    assert unit_body(body, "items", "line")["x-date-order"] == "month-first"


def test_a_reference_date_the_text_states_is_read_in_the_stated_order() -> None:
    """ "Sent on 03/06/2024: taxi yesterday": yesterday is 2 June day first, 5 March month first."""
    text = "Sent on 03/06/2024: taxi yesterday, 12 EUR"
    assert record_values(text, order="day-first").reference == date(2024, 6, 3)
    assert record_values(text, order="month-first").reference == date(2024, 3, 6)
    day_first = grounded_body(BODY, text, date_order="day-first")["properties"]["date"]["enum"]
    assert "2024-06-02" in day_first and "2024-03-05" not in day_first
    assert (
        _judged({**BODY, "x-date-order": "day-first"}, {"date": "2024-06-02", "total": 12}, text).status
        == "ok"
    )
