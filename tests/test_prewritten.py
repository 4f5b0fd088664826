"""A JSON-like example quoted in the text backs nothing: the gold sets' "schema-like example" records."""

from __future__ import annotations

import json

from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.grounding.prewritten import field_key, keyed_values
from formwork.tasks.validate import judge

CONTACT, EXPENSE = load_schema("contact"), load_schema("expense")
# examples/gold/contact.jsonl con-009 and expense.jsonl exp-013, as written there
CRM = (
    'Our CRM form shows placeholders like {"email": "jane.doe@example.com", "phone": "+1 555 0100"}. '
    "Please update my entry: Tom Baker, tom.baker@northwind.io, Northwind Traders."
)
FORM = (
    'The expense form shows the example {"date": "2024-03-15", "amount": 100}; ignore it. '
    "My real expense: flight to Madrid on 2024-08-22, 189 EUR, Carlos, project Sol."
)


def _judge(schema, text: str, data: dict):
    return judge(schema, text, Completion("notes", "stop", 1, 1, 0.0, "m"),
                 Completion(json.dumps(data), "stop", 1, 1, 0.0, "m"))  # fmt: skip


def test_keyed_values_find_what_a_literal_pairs_with_each_key() -> None:
    found = keyed_values(CRM)
    email = [(CRM[s:e], v) for s, e, v in found["email"]]
    assert email == [('"jane.doe@example.com"', "jane.doe@example.com")]
    assert [v for _, _, v in found["phone"]] == ["+1 555 0100"]
    assert keyed_values('{"email": "a@b.io"}') == {}  # a text that is JSON as a whole is the data
    assert (field_key("items[2].name"), field_key("tags[0]"), field_key("Email")) == ("name", "tags", "email")


def test_a_value_copied_from_a_quoted_example_is_not_grounded() -> None:
    copied = {"name": "Tom Baker", "email": "jane.doe@example.com", "phone": None,
              "organization": "Northwind Traders"}  # fmt: skip
    verdict = _judge(CONTACT, CRM, copied)
    assert verdict.status != "ok" and "email" in verdict.nulled
    assert any('"jane.doe@example.com" is what a JSON-like example in the text writes for "email"' in e
               for e in verdict.errors), verdict.errors  # fmt: skip
    rows = {row["path"]: row for row in verdict.evidence}
    assert not rows["email"]["grounded"] and rows["name"]["grounded"]


def test_the_values_the_text_states_stay_ok_beside_the_example() -> None:
    right = {"name": "Tom Baker", "email": "tom.baker@northwind.io", "phone": None,
             "organization": "Northwind Traders"}  # fmt: skip
    assert _judge(CONTACT, CRM, right).status == "ok"
    real = {"who": "Carlos", "date": "2024-08-22", "amount": 189, "currency": "EUR", "category": "travel",
            "project": "Sol"}  # fmt: skip
    assert _judge(EXPENSE, FORM, real).status == "ok"


def test_numbers_and_dates_from_the_example_fail_and_stated_twice_they_pass() -> None:
    example = {"who": "Carlos", "date": "2024-03-15", "amount": 100, "currency": "EUR", "category": "travel",
               "project": "Sol"}  # fmt: skip
    verdict = _judge(EXPENSE, FORM, example)
    assert verdict.status != "ok"
    assert {"date", "amount"} <= {e.split(" ")[0] for e in verdict.errors}, verdict.errors
    # the same numbers also stated in prose are backed there
    stated = FORM + " (The example's 100 EUR on 2024-03-15 was mine too.)"
    assert _judge(EXPENSE, stated, example).status == "ok"


def test_an_enum_the_text_prewrites_for_its_key_is_not_backed() -> None:
    chat = load_schema("chat_tag")
    text = 'Jonas: the form says {"emotion": "happy"} but honestly I\'m devastated about the layoffs.'
    verdict = _judge(chat, text, {"speaker": "Jonas", "emotion": "happy", "reply": None})
    assert verdict.status == "failed"  # emotion is critical
    assert any('emotion "happy" is what a JSON-like example' in e for e in verdict.errors), verdict.errors
    sad = _judge(chat, text, {"speaker": "Jonas", "emotion": "sad", "reply": None})
    assert not any("JSON-like example" in e for e in sad.errors), sad.errors
