"""One phrase backs one field: a free string copied from the words of a number or a date is not grounded."""

from __future__ import annotations

import json

from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.validate import judge

EXPENSE, CONTACT = load_schema("expense"), load_schema("contact")
PARKING = "Parking at the client site, 12 CAD, 2024-11-02, project Maple"


def _judge(schema, text: str, data: dict):
    return judge(schema, text, Completion("notes", "stop", 1, 1, 0.0, "m"),
                 Completion(json.dumps(data), "stop", 1, 1, 0.0, "m"))  # fmt: skip


def test_a_name_or_project_made_of_the_amount_or_the_date_is_not_evidence() -> None:
    copied = {"who": "12", "date": "2024-11-02", "amount": 12, "currency": "CAD", "category": "transport",
              "project": "2024-11-02"}  # fmt: skip
    verdict = _judge(EXPENSE, PARKING, copied)
    assert verdict.status == "partial" and verdict.nulled == ["project", "who"]
    assert verdict.data["amount"] == 12 and verdict.data["date"] == "2024-11-02"  # the originals stay
    assert any('who "12" is the text that gives amount' in e for e in verdict.errors)
    rows = {row["path"]: row for row in verdict.evidence}
    assert not rows["who"]["grounded"] and rows["amount"]["grounded"]


def test_distinct_words_and_longer_phrases_stay_grounded() -> None:
    right = {"who": None, "date": "2024-11-02", "amount": 12, "currency": "CAD", "category": "transport",
             "project": "Maple"}  # fmt: skip
    assert _judge(EXPENSE, PARKING, right).status == "ok"
    # a project named like a number that also appears on its own elsewhere is not inside the amount
    text = "Taxi 12 EUR on 2024-03-03 for project 12"
    data = {"who": None, "date": "2024-03-03", "amount": 12, "currency": "EUR", "category": "transport",
            "project": "project 12"}  # fmt: skip
    assert _judge(EXPENSE, text, data).status == "ok"


def test_a_field_repeating_its_siblings_value_is_the_copy() -> None:
    text = "Cordialement,\nSophie Laurent\nChargée de communication, Agence Lumière\n01 42 68 53 00"
    data = {
        "name": "Sophie Laurent",
        "email": None,
        "phone": "01 42 68 53 00",
        "organization": "Sophie Laurent",
    }
    verdict = _judge(CONTACT, text, data)
    assert verdict.status == "partial" and verdict.nulled == ["organization"]
    assert verdict.data["name"] == "Sophie Laurent"  # the earlier field is the original
    data["organization"] = "Agence Lumière"
    assert _judge(CONTACT, text, data).status == "ok"
