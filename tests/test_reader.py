"""The number reader backs exactly what a written form means: no decimal point read as grouping, no
digit group of an identifier read as an amount, no fuzzy identifier, no blank value (issue 20, 1-4)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.schemas.registry import load_schema
from formwork.tasks.grounding.evidence import Source, ground
from formwork.tasks.grounding.values import ValueFinder

CONTACT = load_schema("contact")


@pytest.mark.parametrize(
    ("text", "backed", "not_backed"),
    [
        ("Total 12.5", 12.5, 125),
        ("Total 20.00", 20, 2000),
        ("Preis 3,99 EUR", 3.99, 399),
        ("1.5 kg", 1.5, 15),
        ("Total 73.00", 73, 7300),
        ("Summe 1.234,50", 1234.5, 1.2345),
        ("1,234,567.89 USD", 1234567.89, 1234.56789),
        ("1,234", 1234, 12.34),  # three digits after the comma: grouping or decimals, both kept
        ("1,234", 1.234, 123.4),
        ("Client lunch, ₹1,25,000", 125000, 125),  # Indian grouping: lakh
        ("Budget Rs 1,00,00,000", 10000000, 100),  # and crore
    ],
)
def test_a_separator_groups_thousands_only_before_exactly_three_digits(text, backed, not_backed) -> None:
    finder = ValueFinder(text)
    assert finder.number(backed) is not None
    assert finder.number(not_backed) is None


@pytest.mark.parametrize(
    ("text", "not_backed", "backed"),
    [
        ("call 0170 5551234, paid 25", 170, 25),
        ("call 0170 5551234, paid 25", 5551234, 25),
        ("Invoice 2024-0042 over 180 EUR", 42, 180),
        ("Invoice 2024-0042 over 180 EUR", 2024, 180),
        ("IBAN DE89 3704 0044 0532 0130 00, amount 44.10", 44, 44.1),
        ("ref ACME-PRJ-2297: 12 EUR", 2297, 12),
        ("Call (415) 555-0132, tip 15", 415, 15),
        ("Tel. +49 89 1234567, 89 EUR", 1234567, 89),
        ("zip 01067, 30 EUR", 1067, 30),  # a leading zero: a code
        ("a 3-day trip, 35 EUR", 36, 3),  # a short joined word keeps its number
    ],
)
def test_identifier_digits_back_no_amount(text, not_backed, backed) -> None:
    finder = ValueFinder(text)
    assert finder.number(not_backed) is None
    assert finder.number(backed) is not None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("mail j.smith@acme.com today", "j.smyth@acme.com"),
        ("project ACME-PRJ-2291 closed", "ACME-PRJ-2297"),
        ("signed Jonathan", "Jonathon"),  # one word: exact or normalised only
    ],
)
def test_identifiers_never_match_fuzzily(text, value) -> None:
    assert Source(text).quote(value)[0] == "none"


def test_two_words_without_digits_still_match_fuzzily() -> None:
    assert Source("Jon Smith signed it").quote("John Smith")[0] == "fuzzy"


@pytest.mark.parametrize("text", ["ab", "x", "Call Anna Berg on Monday about the offer " * 20])
@pytest.mark.parametrize("blank", ["", "   ", "\n"])
def test_a_blank_string_is_no_value(text, blank) -> None:
    data = {"name": blank, "email": None, "phone": None, "organization": None}
    (proof,) = ground(CONTACT.checked_body, data, text)
    assert not proof.grounded and proof.kind == "none" and proof.spans == ()


# --- properties: a written amount backs what it means and nothing else ------------------------------

CENTS = st.integers(min_value=0, max_value=10**9)
MARKS = st.sampled_from(["", "$", "€", "EUR ", "£"])


def grouped(whole: int, sep: str) -> str:
    return f"{whole:,}".replace(",", sep)


@settings(deadline=None)  # dateparser's first parse and a shared machine's load: no time bound
@given(cents=CENTS, style=st.sampled_from(["en", "de", "ch", "plain"]), mark=MARKS, decimals=st.booleans())
def test_a_written_amount_backs_its_value_and_not_its_shifted_neighbours(cents, style, mark, decimals):
    whole, frac = divmod(cents, 100)
    group, point = {"en": (",", "."), "de": (".", ","), "ch": ("'", "."), "plain": ("", ".")}[style]
    written = grouped(whole, group) if group else str(whole)
    if decimals:
        written += f"{point}{frac:02d}"
    value = Decimal(cents) / 100 if decimals else Decimal(whole)
    finder = ValueFinder(f"Total: {mark}{written} paid")
    assert finder.number(str(value)) is not None
    for wrong in {value * 10, value * 100, value * 1000, value + 1} - {value}:
        assert finder.number(str(wrong)) is None


# --- the enumeration and the checkers are one reader ------------------------------------------------

FRAGMENTS = st.sampled_from(
    ["Total 1,234.50 EUR", "paid 12.5", "on 2024-03-14", "3/4/2024", "March 3rd 2020", "yesterday",
     "call 0170 5551234", "Invoice 2024-0042", "1.234", "at 12:30", "42", "x", "٣"]
)  # fmt: skip


@settings(deadline=None)  # dateparser's first parse and a shared machine's load: no time bound
@given(parts=st.lists(FRAGMENTS, max_size=5), probe=st.decimals(min_value=0, max_value=10**7, places=2))
def test_number_accepts_exactly_the_enumerated_values(parts, probe) -> None:
    finder = ValueFinder(" ; ".join(parts), date(2024, 6, 10), "meta reference_date")
    listed = {r.value for r in finder.number_readings()}
    assert all(finder.number(str(v)) is not None for v in listed)
    assert (finder.number(str(probe)) is not None) == (probe in listed)


@settings(deadline=None)  # dateparser's first parse and a shared machine's load: no time bound
@given(parts=st.lists(FRAGMENTS, max_size=4), probe=st.dates(min_value=date(1990, 1, 1)))
def test_date_accepts_exactly_the_enumerated_dates(parts, probe) -> None:
    finder = ValueFinder(" ; ".join(parts), date(2024, 6, 10), "meta reference_date")
    listed = {r.value for r in finder.date_readings()}
    assert all(finder.date(d.isoformat()) is not None for d in listed)
    assert (finder.date(probe.isoformat()) is not None) == (probe in listed)


def test_readings_carry_value_span_kind_and_the_anchor_of_a_derived_date() -> None:
    text = "Sent 2024-06-10: taxi yesterday, 1.234,50 EUR and 42 EUR"
    finder = ValueFinder(text, date(2024, 6, 10), "meta reference_date")
    numbers = {(r.value, text[r.span[0] : r.span[1]], r.kind) for r in finder.number_readings()}
    assert numbers == {(Decimal("1234.50"), "1.234,50", "normalised"), (Decimal(42), "42", "exact")}
    dates = {(r.value, text[r.span[0] : r.span[1]], r.kind, r.anchor) for r in finder.date_readings()}
    assert (date(2024, 6, 10), "2024-06-10", "exact", None) in dates
    assert (date(2024, 6, 9), "yesterday", "derived", "meta reference_date") in dates
    assert date(2024, 6, 11) not in {d for d, *_ in dates}
