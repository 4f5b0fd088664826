"""A person's name in a text that writes names with capitals is written with one (tasks.grounding.capitals).

On the expense gold the 1.5B took "team", "client", "candidate" and "finance" as the person who paid; a
person field's candidates now leave out a span without a capital where the text capitalises a word
inside a line, and keep every span where it does not ("parking 12 bucks downtown yesterday -jess")."""

from __future__ import annotations

import pytest

from formwork.schemas.registry import load_schema
from formwork.tasks.grounding.absent import SPELLINGS
from formwork.tasks.grounding.candidates import grounded_body
from formwork.tasks.grounding.capitals import uncapitalised, writes_capitals

EXPENSE = load_schema("expense")


def _who(text: str) -> list[str]:
    body = grounded_body(EXPENSE.grammar_body, text, checked=EXPENSE.checked_body)
    return [v for v in body["properties"]["who"]["enum"] if isinstance(v, str)]


@pytest.mark.parametrize(
    ("text", "capitalises"),
    [("got the team a round of coffees at Blue Bottle, 27 bucks", True),
     ("Coffee with a candidate, 9.80 EUR, today", True),
     ("parking 12 bucks downtown yesterday -jess", False),
     ("Parking 12 bucks. Lunch. Tom paid", False),  # capitals only where a sentence begins
     ("regards\nsteve h\nfleet maint", False),
     ("午餐 120 元，付款人 王伟", False)],
)  # fmt: skip
def test_a_text_capitalises_names_where_it_capitalises_a_word_inside_a_line(
    text: str, capitalises: bool
) -> None:
    assert writes_capitals(text) is capitalises


def test_a_span_is_uncapitalised_only_where_its_letters_have_case_and_none_is_a_capital() -> None:
    assert uncapitalised("team") and uncapitalised("@finance") and uncapitalised("steve h")
    assert not uncapitalised("Mei") and not uncapitalised("van der Berg") and not uncapitalised("星河")
    assert not uncapitalised("12.50")


def test_a_person_field_is_offered_no_common_word_where_the_text_capitalises_names() -> None:
    offered = _who("got the team a round of coffees at Blue Bottle with Mei, 27 bucks")
    assert "Mei" in offered and "Blue Bottle" in offered
    assert not [v for v in offered if uncapitalised(v) and v not in SPELLINGS], (
        offered
    )  # null's spellings stay


def test_a_text_that_capitalises_nothing_keeps_every_span_for_a_person() -> None:
    offered = _who("parking 12 bucks downtown yesterday -jess")
    assert "jess" in offered


def test_a_field_that_names_no_person_keeps_its_uncapitalised_spans() -> None:
    text = "got the team coffees at Blue Bottle, project apollo, 27 bucks"
    body = grounded_body(EXPENSE.grammar_body, text, checked=EXPENSE.checked_body)
    assert "apollo" in body["properties"]["project"]["enum"]


def test_a_field_holds_a_person_where_the_first_kind_it_names_is_a_person() -> None:
    from formwork.tasks.grounding.cues import names_a_person

    assert names_a_person(EXPENSE.properties["who"]["description"], "who")
    assert names_a_person("The name of the person speaking, when the line names them", "speaker")
    contact = load_schema("contact").properties
    assert names_a_person(contact["name"]["description"], "name")
    assert not names_a_person(
        contact["organization"]["description"], "organization"
    )  # "the person works for"
    assert not names_a_person(EXPENSE.properties["project"]["description"], "project")
