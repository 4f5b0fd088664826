"""Properties of the readers (issue 27): an amount reads back to itself however its thousands are
grouped, and a date expression yields only the day it states, never one a part of it would mean."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.tasks.grounding.values import ValueFinder

GROUPING = [",", ".", " ", "\u2009", "\u00a0", "\u202f", "'"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def written(units: int, cents: int | None, grouping: str, point: str) -> str:
    """`units`.`cents` with its thousands grouped by `grouping` and `point` as the decimal mark."""
    digits = str(units)
    groups = [digits[max(0, end - 3) : end] for end in range(len(digits), 0, -3)][::-1]
    return grouping.join(groups) + (f"{point}{cents:02d}" if cents is not None else "")


@settings(max_examples=300, deadline=None)
@given(
    units=st.integers(min_value=0, max_value=10**9),
    cents=st.none() | st.integers(min_value=0, max_value=99),
    grouping=st.sampled_from(GROUPING),
    point=st.sampled_from([",", "."]),
    before=st.sampled_from(["Total ", "Hôtel Lutetia, 2 nuits : ", "razem ", ""]),
    after=st.sampled_from([" EUR", " CHF", " zł", "", " kr."]),
)
def test_an_amount_reads_back_to_itself_however_it_is_grouped(
    units: int, cents: int | None, grouping: str, point: str, before: str, after: str
) -> None:
    if grouping == point:
        point = "," if point == "." else "."
    amount = written(units, cents, grouping, point)
    value = Decimal(units) + (Decimal(cents) / 100 if cents is not None else 0)
    finder = ValueFinder(before + amount + after)
    whole = (len(before), len(before) + len(amount))
    assert any(r.value == value and r.span == whole for r in finder.number_readings()), (
        amount,
        finder.number_readings(),
    )


REFERENCE = date(2024, 6, 10)


def _expressions(day: date, year: bool) -> list[str]:
    d, month, weekday = day.day, MONTHS[day.month - 1], WEEKDAYS[day.weekday()]
    forms = [f"{d} {month}", f"{weekday} {d} {month}", f"{weekday[:3]} {d} {month}", f"{month} {d}"]
    return (
        [f"{form}{' ' if form[-1].isdigit() is False else ', '}{day.year}" for form in forms]
        if year
        else forms
    )


@settings(max_examples=40, deadline=None)
@given(
    day=st.dates(min_value=date(2023, 6, 11), max_value=date(2024, 6, 10)),
    year=st.booleans(),
    form=st.integers(min_value=0, max_value=3),
    amount=st.integers(min_value=1, max_value=99),
)
def test_a_date_expression_yields_only_the_day_it_states(
    day: date, year: bool, form: int, amount: int
) -> None:
    """Within the year up to the reference, a year-less expression means that day too; an amount after
    it is never its year, and no part of it ("Mon 3", "June") means another day."""
    expression = _expressions(day, year)[form]
    text = f"Taxi {expression}, {amount} EUR"
    days = {r.value for r in ValueFinder(text, REFERENCE, "given").date_readings()}
    assert days == {day}, (text, days)
    assert Decimal(amount) in {r.value for r in ValueFinder(text, REFERENCE, "given").number_readings()}


@settings(max_examples=20, deadline=None)
@given(shift=st.integers(min_value=1, max_value=30), step=st.sampled_from(["next", "last"]),
       weekday=st.sampled_from(WEEKDAYS))  # fmt: skip
def test_next_and_last_name_the_weekday_after_or_before_the_reference(
    shift: int, step: str, weekday: str
) -> None:
    reference = REFERENCE + timedelta(days=shift)
    days = {
        r.value
        for r in ValueFinder(f"Taxi {step} {weekday} to the airport", reference, "given").date_readings()
    }
    assert len(days) == 1, days
    (found,) = days
    assert found.weekday() == WEEKDAYS.index(weekday)
    assert (0 < (found - reference).days <= 7) if step == "next" else (0 < (reference - found).days <= 7)
