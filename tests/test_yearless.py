"""Year-less days at a line's start, read against a reference date; a list's header gives its units one.

A Sparkasse statement writes `02.05.` and leaves the year to its header; the 1.5B gave all 17 of its
expenses a null date (BENCHMARKS section 34). Checked here apart from any model: what is read as a day
and what is not (a price), which year is meant, and which day of a header is the reference.
"""

from __future__ import annotations

import json
from datetime import date

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions, Outcome
from formwork.tasks.engines.base import Completion
from formwork.tasks.grounding.anchors import anchored_reference, latest_stated_day
from formwork.tasks.grounding.values import record_values
from formwork.tasks.grounding.yearless import yearless_readings
from formwork.tasks.long.parts import Part
from formwork.tasks.long.partwise import extract_long
from formwork.tasks.long.plan import Plan
from formwork.tasks.long.read import units_to_read, whole_meta
from formwork.tasks.long.units import find_units
from formwork.tasks.validate import Verdict, judge

MAY_31 = date(2024, 5, 31)


def _days(text: str, reference: date | None = MAY_31) -> list[date]:
    return [reading.value for reading in yearless_readings(text, reference, "header")]  # type: ignore[misc]


def test_a_day_starting_a_line_takes_the_nearest_year_not_after_the_reference() -> None:
    assert _days("02.05.  02.05.  Kartenzahlung girocard   45,90 S") == [date(2024, 5, 2)]
    assert _days("28.12. Miete", date(2025, 1, 31)) == [date(2024, 12, 28)], "a January statement's December"
    assert _days("05/02  AMAZON 12.99") == [date(2024, 5, 2)], "5 February is no day of a May statement"
    assert _days("02/05  MONOPRIX 38,42") == [date(2024, 5, 2)], "nor is 2 May read month first"
    assert _days("05/04  AMAZON 12.99") == [date(2024, 4, 5), date(2024, 5, 4)], "both within two months"
    assert _days("07.05. Kartenzahlung", date(2024, 6, 30)) == [date(2024, 5, 7)]
    assert _days("07.05. Kartenzahlung", date(2024, 8, 30)) == [], "more than two months back: no day"
    assert _days("  31.05 Entgelt 6,95") == [date(2024, 5, 31)]
    assert _days("02.05. Kartenzahlung", None) == [], "no reference, no day"


def test_a_price_a_whole_date_or_a_day_inside_a_sentence_is_no_year_less_day() -> None:
    for text in ("Milk 3.10 EUR", "3.10 EUR Milk\n", "09.04.24 City tax 7.00", "open 24/7", "12.50 Taxi",
                 "31.02. nothing", "2,50 Brot"):  # fmt: skip
        assert _days(text) == [], text
    assert _days("午後 10/6 会議") == [], "Han or kana month/day slashes are read in cjk_dates"


def test_a_year_less_day_is_a_derived_reading_beside_the_others() -> None:
    readings = record_values("02.05. REWE 45,90\n", MAY_31, "text: Kontostand vom 31.05.2024").date_readings()
    assert [(r.value, r.kind, r.anchor) for r in readings] == [
        (date(2024, 5, 2), "derived", "text: Kontostand vom 31.05.2024")
    ]


def test_the_reference_is_the_latest_day_the_header_states_dotted_days_read_day_first() -> None:
    header = "Arrival: 09.04.2024    Departure: 13.04.2024\nprinted 12/11/2023\n"
    assert latest_stated_day(header) == (date(2024, 4, 13), "text: Arrival: 09.04.2024 Departure: 13.04.2024")
    assert latest_stated_day("printed 04/09/2024 on page 2") is None, "4 September or 9 April: not known"
    assert latest_stated_day("Statement 5/2024, no day") is None


def test_units_are_read_against_the_header_unless_the_record_gives_a_reference() -> None:
    text = (
        "Kontoauszug 5/2024\nneuer Kontostand vom 31.05.2024   3.626,56 H\n\n"
        "02.05.  02.05.  Kartenzahlung girocard   45,90 S\n                REWE Markt\n"
        "03.05.  03.05.  Lastschrift              89,00 S\n                Stadtwerke\n"
    )
    layout = find_units(text)
    meta = layout.reading_meta(None, text, "reference_date")
    assert anchored_reference(meta, "reference_date") == (
        MAY_31,
        "text: neuer Kontostand vom 31.05.2024 3.626,56 H",
    )
    given = {"reference_date": "2024-06-03"}
    assert layout.reading_meta(given, text, "reference_date") is given, "the record's own reference wins"


def test_each_part_of_a_statement_read_in_parts_is_read_against_its_header() -> None:
    """A statement read in parts (no `x-units`, or too long to read item by item) gives every part the
    header's closing day as its reference, as its units get it: a part of `02.05.` lines has no year."""
    text = (
        "Kontoauszug 5/2024\nneuer Kontostand vom 31.05.2024   3.626,56 H\n\n"
        "02.05.  02.05.  Kartenzahlung girocard   45,90 S\n                REWE Markt\n"
        "03.05.  03.05.  Lastschrift              89,00 S\n                Stadtwerke\n"
    )
    middle = text.index("03.05.")
    plan = Plan([Part(0, middle), Part(middle, len(text))])
    schema = load_schema("examples/gold/long/statement.schema.json")
    seen: list[dict | None] = []

    def per_record(record_id, shown, reading, reasoner, formatter, options, meta, asked=()) -> Outcome:
        seen.append(meta)  # the seam `extract_long` reads each part through: what it is given
        return Outcome(record_id, Verdict("partial", {"expenses": []}, ["read by no model"]), attempts=1)

    options = ExtractOptions(max_attempts=1)
    for given, reference in ((None, "2024-05-31"), ({"reference_date": "2024-06-03"}, "2024-06-03")):
        seen.clear()
        extract_long(1, text, schema, (None, None), options, plan, per_record, given)  # type: ignore[arg-type]
        day = date.fromisoformat(reference)
        assert [anchored_reference(m, "reference_date")[0] for m in seen] == [day, day]
    prose = "Paid the plumber on 31.05.2024. The parts came yesterday."  # no list: no header to read
    assert find_units(prose).reading_meta(None, prose, "reference_date") is None


def test_a_short_statement_read_whole_is_read_against_its_header_as_its_units_would_be() -> None:
    """Three `02.05.` lines are too few to read item by item: read whole, a perfect answer's days pass
    against the header's closing day, where against no reference they could not be read at all."""
    text = (
        "Kontoauszug 5/2024\nneuer Kontostand vom 31.05.2024   3.626,56 H\n\n"
        "02.05.  02.05.  Kartenzahlung girocard   45,90 S\n                REWE Markt\n"
        "03.05.  03.05.  Lastschrift              89,00 S\n                Stadtwerke\n"
    )
    schema, options = load_schema("examples/gold/long/statement.schema.json"), ExtractOptions()
    assert units_to_read(text, schema, options) is None, "read whole"
    meta = whole_meta(text, schema, options, None)
    assert anchored_reference(meta, "reference_date")[0] == MAY_31
    answer = {"holder": None, "currency": "EUR", "total": None, "expenses": [
        {"date": "2024-05-02", "description": "REWE Markt", "amount": 45.90},
        {"date": "2024-05-03", "description": "Stadtwerke", "amount": 89.00},
    ]}  # fmt: skip
    shown = json.dumps(answer)
    done = Completion(shown, "stop", 1, 1, 0.0, "perfect", ((shown, 0.0),))
    notes = Completion("", "stop", 1, 1, 0.0, "perfect")
    assert judge(schema, text, notes, done, meta=meta).data["expenses"][0]["date"] == "2024-05-02"
    assert judge(schema, text, notes, done, meta=None).data["expenses"][0]["date"] is None
    expense, note = load_schema("expense"), "Paid the plumber 31.05.2024, parts came 02.05."
    assert whole_meta(note, expense, options, None) is None, "a schema with no list keeps the record's"
