"""An enum with `x-aliases` is read from the text where the text writes one of its labels."""

from __future__ import annotations

import pytest

from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.grounding.aliases import written_labels
from formwork.tasks.grounding.candidates import grounded_body
from formwork.tasks.validate import judge

EXPENSE = load_schema("expense")
CURRENCY = EXPENSE.checked_body["properties"]["currency"]


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("Taxi, €35, Tom", {"EUR"}),
        ("Taxi, 35 eur, Tom", {"EUR"}),  # the label itself, any case
        ("Parking C$ 12", {"CAD"}),  # not the USD of its "$"
        ("Ticket 350 A$ and a $5 tip", {"AUD", "USD"}),
        ("480元，项目：星河", {"CNY"}),
        ("ホテル代 １万８千円", {"JPY"}),
        ("USDT 5 for gas", set()),  # a label inside a longer word is not written
        ("Almoço R$ 87,50", set()),  # Brazil's real: its "$" is not a dollar
        ("Bus ticket, 39 SEK", set()),  # "other" is a choice: nothing writes it
    ],
)
def test_the_labels_a_text_writes(text: str, labels: set[str]) -> None:
    assert set(written_labels(CURRENCY, text)) == labels


def test_without_aliases_no_label_is_read() -> None:
    assert written_labels({"enum": ["EUR", "USD"]}, "35 EUR") == {}


def test_grounded_decoding_offers_only_the_written_labels() -> None:
    offered = grounded_body(EXPENSE.grammar_body, "Taxi, €35, Tom", checked=EXPENSE.checked_body)
    assert offered["properties"]["currency"] == {"enum": ["EUR"]}
    assert offered["properties"]["category"] == EXPENSE.grammar_body["properties"]["category"]  # a choice
    unwritten = grounded_body(EXPENSE.grammar_body, "Bus ticket, 39 SEK", checked=EXPENSE.checked_body)
    assert unwritten["properties"]["currency"] == EXPENSE.grammar_body["properties"]["currency"]


def _currency_errors(currency: str) -> list[str]:
    answer = (
        f'{{"who": "Tom", "date": null, "amount": 35, "currency": "{currency}", "category": "transport", '
        '"project": null}'
    )
    done = Completion(answer, "stop", 1, 1, 0.1, "m")
    # every unread choice is held to an impossible bound, as a run without calibration holds it
    verdict = judge(EXPENSE, "Taxi, €35, Tom", done, done, choice_confidence=2.0)
    return [e for e in verdict.errors if e.startswith("currency")]


def test_a_written_label_is_held_to_the_values_bound_and_an_unwritten_one_stays_a_choice() -> None:
    """EUR is read from "€" (values' bound, here 0: passes); USD is a choice no calibration covers."""
    assert _currency_errors("EUR") == []
    assert any("no calibration covers" in e for e in _currency_errors("USD"))
