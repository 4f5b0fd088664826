"""One phrase backs one field: a free string copied from the words of a number or a date is not grounded."""

from __future__ import annotations

import json

import pytest

from formwork.schemas.registry import load_schema, schema_from_body
from formwork.tasks.calls import ExtractOptions
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


@pytest.mark.parametrize(
    ("text", "words", "amount", "currency"),
    [
        ("2024年6月3日和客户吃晚饭，花了480元，项目：星河", "星河", 480, "CNY"),  # the 1.5B's who, first
        ("Team lunch 2024-06-03, 48 EUR, Projekt Falke", "Falke", 48, "EUR"),
        ("Dinner 2024-06-03, 95 EUR. Bill to project Apollo", "Apollo", 95, "EUR"),
    ],
)
def test_of_two_siblings_with_the_same_words_the_one_the_text_cues_keeps_them(
    text: str, words: str, amount: int, currency: str
) -> None:
    """Issue 27: which sibling repeats the other is read from the text (the project's cue before the
    words), not from the schema's order, which kept the person and refused the project."""
    data = {"who": words, "date": "2024-06-03", "amount": amount, "currency": currency, "category": "meals",
            "project": words}  # fmt: skip
    verdict = _judge(EXPENSE, text, data)
    assert verdict.nulled == ["who"] and verdict.data["project"] == words, verdict.errors
    assert any(e.startswith(f'who "{words}" is the text that gives project') for e in verdict.errors)


def test_the_person_the_text_cues_keeps_the_words_a_project_repeats() -> None:
    text = "Taxi 2024-06-03, 30 EUR, paid by Apollo"
    data = {"who": "Apollo", "date": "2024-06-03", "amount": 30, "currency": "EUR", "category": "transport",
            "project": "Apollo"}  # fmt: skip
    verdict = _judge(EXPENSE, text, data)
    assert verdict.nulled == ["project"] and verdict.data["who"] == "Apollo"


SHOPPING = load_schema("shopping_list")


def _items(*names: str) -> list[dict]:
    return [{"name": name, "quantity": 1} for name in names]


def test_each_array_element_needs_its_own_place_in_the_text() -> None:
    looped = _judge(
        SHOPPING, "Aldi: milk, eggs", {"items": _items("milk", "eggs", "milk", "Milk"), "store": "Aldi"}
    )
    assert looped.status == "failed"  # items is critical: a list padded with copies is not the list
    assert any('items[2].name "milk" is the text that gives items[0].name' in e for e in looped.errors)
    assert any("items[3].name" in e for e in looped.errors)
    rows = {row["path"]: row for row in looped.evidence}
    assert rows["items[0].name"]["grounded"] and not rows["items[2].name"]["grounded"]


def test_an_element_written_twice_may_appear_twice() -> None:
    twice = {"items": _items("milk", "eggs", "milk"), "store": None}
    assert _judge(SHOPPING, "milk, eggs, and milk again for grandma", twice).status == "ok"


def test_a_number_that_is_part_of_the_date_is_no_amount() -> None:
    """The bundled model chose `amount: 2024` for "35 EUR, March 3rd 2024" and 12 for "£59.99 on 12
    Jan 2024", at p 0.97: each number is on the receipt, but only as a part of the date."""
    text = "Bought a new keyboard for the office: £59.99 on 12 Jan 2024"
    base = {"who": None, "date": "2024-01-12", "currency": "GBP", "category": "office", "project": None}
    for part in (12, 2024):
        verdict = _judge(EXPENSE, text, base | {"amount": part})
        assert verdict.status == "failed"  # amount is required: the row cannot keep it nulled
        assert any(f"amount {part} is the text that gives date" in e for e in verdict.errors)
    assert _judge(EXPENSE, text, base | {"amount": 59.99}).status == "ok"
    # a 12 written on its own as well is a number of its own; and with no date chosen, nothing holds it
    assert (
        _judge(EXPENSE, "Parking 12 CAD on 12 Jan 2024", base | {"amount": 12, "currency": "CAD"}).status
        == "ok"
    )
    assert not any("amount" in e for e in _judge(EXPENSE, text, base | {"amount": 12, "date": None}).errors)


@pytest.mark.parametrize(
    ("field", "words"),
    [
        ("who", "12 CAD, 2024-11-02, project Maple"),  # the bundled model's who, grounding on
        ("project", "Parking at the client site, 12 CAD"),
        ("project", "2024-11-02, project Maple"),
    ],
)
def test_a_name_holding_the_date_or_the_price_is_refused_and_never_offered(field: str, words: str) -> None:
    """Issue 27: no name of a person, company or project holds a date or a price; such a span, chosen
    where the text names nobody, was kept as the person's name."""
    data = {"who": None, "date": "2024-11-02", "amount": 12, "currency": "CAD", "category": "transport",
            "project": None, field: words}  # fmt: skip
    verdict = _judge(EXPENSE, PARKING, data)
    assert field in verdict.nulled and verdict.data["amount"] == 12
    offered = ExtractOptions(grounded_decoding=True).formatting_grammar(EXPENSE, PARKING, None)
    assert words not in offered["properties"][field]["enum"]
    assert "Maple" in offered["properties"]["project"]["enum"]


def test_a_free_text_field_that_is_no_name_may_hold_a_price() -> None:
    note = {"type": ["string", "null"], "maxLength": 80, "description": "What the expense was, briefly."}
    body = {**EXPENSE.body, "properties": {**EXPENSE.body["properties"], "note": note}}
    schema = schema_from_body({**body, "required": [*EXPENSE.body["required"], "note"]}, "test")
    data = {"who": None, "date": "2024-11-02", "amount": 12, "currency": "CAD", "category": "transport",
            "project": "Maple", "note": "Parking at the client site, 12 CAD"}  # fmt: skip
    assert _judge(schema, PARKING, data).status == "ok"


RECEIPT_LONG = load_schema("examples/gold/long/receipt.schema.json")


def _receipt_line(text: str, item: dict) -> dict:
    """The one line's item as judged, the receipt's total its amount."""
    row = {"merchant": None, "date": None, "total": item["amount"], "currency": "JPY", "items": [item]}
    verdict = _judge(RECEIPT_LONG, text, row)
    return {
        "quantity": verdict.data["items"][0]["quantity"],
        "amount": verdict.data["items"][0]["amount"],
        "status": verdict.status,
        "errors": verdict.errors,
    }


def test_a_count_that_is_part_of_the_products_name_is_no_count() -> None:
    """The 1.5B read `封筒長311　2点` with quantity 311 and `食パン　６枚切` with 6; the row's sum could
    not see either. A count written against its mark, or apart from the name's words, stays."""
    envelope = {"description": "封筒長311", "quantity": 311, "amount": 20}
    refused = _receipt_line("封筒長311　2点　¥20", envelope)
    assert refused["quantity"] is None and refused["status"] == "partial"
    assert any(
        "items[0].quantity 311 is the text that gives items[0].description" in e for e in refused["errors"]
    )
    sliced = {"description": "食パン　６枚切", "quantity": 6, "amount": 168}
    assert _receipt_line("食パン　６枚切　　　　　¥１６８※", sliced)["quantity"] is None
    for text, item in [
        ("封筒長311　2点　¥20", envelope | {"quantity": 2}),  # the count beside its mark
        ("Apples x3 £2.40", {"description": "Apples x3", "quantity": 3, "amount": 2.4}),
        ("Lunch for 3 £24.00", {"description": "Lunch for 3", "quantity": 3, "amount": 24.0}),
        (
            "中国铁路12306 174.37元",
            {"description": "中国铁路12306 174.37元", "quantity": None, "amount": 174.37},
        ),
    ]:
        kept = _receipt_line(text, item)
        assert kept["quantity"] == item["quantity"] and kept["status"] == "ok", (text, kept)


def test_a_count_written_only_as_part_of_a_word_is_no_count() -> None:
    """The 1.5B shortened the name and kept its number as the count: 食パン with 6 from ６枚切, 味噌 with
    750 from 750g."""
    for text, item in [
        ("食パン　６枚切　　　　　¥１６８※", {"description": "食パン", "quantity": 6, "amount": 168}),
        ("味噌　750g　　　　　¥298※", {"description": "味噌", "quantity": 750, "amount": 298}),
    ]:
        refused = _receipt_line(text, item)
        assert refused["quantity"] is None and refused["status"] == "partial", refused
        assert any("is part of the word" in e for e in refused["errors"])
    for text, item in [
        ("たまご 10個 ¥258", {"description": "たまご", "quantity": 10, "amount": 258}),
        ("BANANAS 0.915kg @ £0.73/kg £0.67", {"description": "BANANAS", "quantity": 0.915, "amount": 0.67}),
    ]:
        assert _receipt_line(text, item)["quantity"] == item["quantity"], text


def test_a_count_that_is_the_lines_price_is_no_count() -> None:
    """Offered neither 3 (from ３パック) nor anything else, the 1.5B gave a line's price as its count:
    298 tubs of miso, 1.15 pints of milk. A number a currency touches is a price, never a count."""
    for text, item in [
        ("味噌　750g　　　　　¥２９８※", {"description": "味噌　750g", "quantity": 298, "amount": 298}),
        ("SAINSBURYS BASICS MILK 2PT     £1.15", {"description": "SAINSBURYS BASICS MILK 2PT",
                                                 "quantity": 1.15, "amount": 1.15}),
        ("Taxi 12€", {"description": "Taxi", "quantity": 12, "amount": 12}),
    ]:  # fmt: skip
        refused = _receipt_line(text, item)
        assert refused["quantity"] is None and refused["amount"] == item["amount"], refused
        assert refused["status"] == "partial" and any("not a count" in e for e in refused["errors"])
    for text, item in [
        ("CATHEDRAL CITY 350G   £5.50\n  2 @ £2.75", {"description": "CATHEDRAL CITY 350G", "quantity": 2,
                                                      "amount": 5.5}),
        ("Cable ties 100 pack 2 12.00 USD", {"description": "Cable ties 100 pack", "quantity": 2,
                                             "amount": 12}),
    ]:  # fmt: skip
        assert _receipt_line(text, item)["quantity"] == item["quantity"], text


def test_a_price_written_against_its_currency_stays_the_amount_inside_a_swallowed_name() -> None:
    """Chinese writes no space between words and numbers: 花了480元 is a price, never a word's part."""
    text = "2024年6月3日和客户吃晚饭，花了480元，项目：星河"
    data = {"who": None, "date": "2024-06-03", "amount": 480, "currency": "CNY", "category": "meals",
            "project": "花了480元"}  # fmt: skip
    verdict = _judge(EXPENSE, text, data)
    assert verdict.data["amount"] == 480 and verdict.data["project"] is None, verdict.errors


SIGNATURE = load_schema("examples/schemas/email_signature.schema.json")


def test_a_web_site_that_spells_its_organizations_name_is_no_copy() -> None:
    """A company named after its domain writes the same words as its web site: the website field, an
    identifier, holds them as its own (the TextMine signature judged a right `pricefusion.fr` a copy)."""
    text = "Julie Martin\nResponsable achats\nPriceFusion.fr\n06 12 34 56 78"
    data = {"full_name": "Julie Martin", "job_title": "Responsable achats", "organization": "PriceFusion.fr",
            "email": None, "phone": "06 12 34 56 78", "website": "pricefusion.fr"}  # fmt: skip
    verdict = _judge(SIGNATURE, text, data)
    assert verdict.status == "ok", verdict.errors
    # a web site made of the organization's words that is no address at all is still the copy
    text = "Julie Martin\nResponsable achats\nPrice Fusion\n06 12 34 56 78"
    data |= {"organization": "Price Fusion", "website": "Price Fusion"}
    verdict = _judge(SIGNATURE, text, data)
    assert verdict.nulled == ["website"], verdict.errors
