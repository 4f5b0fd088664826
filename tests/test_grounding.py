"""Every matching rule on hand-made cases, and the status rules it drives in `judge`."""

from __future__ import annotations

import json
from datetime import date

import pytest

from formwork.schemas.annotations import default_rule, grounding_problems
from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.grounding.evidence import Source, ground, record_source
from formwork.tasks.validate import judge

EXPENSE = load_schema("expense")
CONTACT = load_schema("contact")
SHOPPING = load_schema("shopping_list")


def spans_text(text: str, spans) -> list[str]:
    return [text[s:e] for s, e in spans]


# --- quote: free strings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "kind", "written"),
    [
        ("Paid by Maria Lopez today", "Maria Lopez", "exact", "Maria Lopez"),
        ("Paid by MARIA   lopez, today", "Maria Lopez", "normalised", "MARIA   lopez"),
        ("contact: O'Brien-Smith Ltd.", "obrien smith ltd", "fuzzy", "O'Brien-Smith Ltd"),
        ("Sent from ACME Corp., Berlin", "Acme Corp", "normalised", "ACME Corp"),
        ("Jon Smith signed it", "John Smith", "fuzzy", "Jon Smith"),
        ("firmado: María-José Fernández", "Maria Jose Fernandez", "normalised", "María-José Fernández"),
        ("ラーメン代はガスト", "カスト", None, None),  # a voicing mark is not an accent
        ("付款人：张伟，金额 50 元", "张伟", "exact", "张伟"),
        ("付款人：张伟，金额 50 元", "李娜", None, None),
        ("Звонил Иван Петров вчера", "иван петров", "normalised", "Иван Петров"),
        ("call me on +1 (555) 010-0199 after six", "555-010-0199", "normalised", "+1 (555) 010-0199"),
        ("call me on 555 0100", "+1 555 0100", None, None),  # a country code the text never wrote
        ("Also bought", "Al", None, None),  # a word cut in two is no match
    ],
)
def test_quote_rule(text: str, value: str, kind: str | None, written: str | None) -> None:
    found = Source(text).quote(value)
    if kind is None:
        assert found[0] == "none" and found[1] == ()
    else:
        assert found[0] == kind
        assert spans_text(text, found[1])[0] == written


def test_quote_finds_every_occurrence_in_a_long_text_with_the_right_offsets() -> None:
    text = ("filler words here. " * 150) + "Invoice from Globex Corporation. " + ("more text " * 200)
    text += "Globex Corporation again."
    kind, spans, _ = Source(text).quote("Globex Corporation")
    assert kind == "exact" and spans_text(text, spans) == ["Globex Corporation"] * 2


# --- value: numbers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "written",
    ["1,234.50", "1.234,50", "$1234.5", "1234.50 EUR", "1234,5", "total: 1234.5."],
)
def test_a_number_is_found_in_any_written_form(written: str) -> None:
    text = f"Receipt 42: {written} thanks"
    match = Source(text).values.number(1234.5)
    assert match is not None
    assert spans_text(text, match.spans)[0] in written


@pytest.mark.parametrize("value", [1.5, 0, 10, 12, 234.5, 1234])
def test_a_number_not_written_is_not_found(value: float) -> None:
    assert Source("Total 1,234.50 EUR, 3 items").values.number(value) is None


@pytest.mark.parametrize("value", [12, 3, 30, 2020, 10])
def test_the_parts_of_a_date_or_a_time_are_not_amounts(value: int) -> None:
    text = "Receipt 2020-03-12 12:30 / 10.02.2024 / 3/3/20, total 7.90"
    assert Source(text).values.number(value) is None
    assert Source(f"{text}, tip {value}").values.number(value) is not None  # written as a number, it is


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("27 May   SAINSBURYS S/MKTS 0611                            27.18", 27.18),  # columns, no phone
        ("合　計　　　　¥５，２４３", 5243),  # a full-width thousands comma
        ("１２．５０ 円", 12.5),
        ("我们3个，25人", 25),  # a CJK comma between numbers separates them
    ],
)
def test_a_number_in_a_list_line_is_found(text: str, value: float) -> None:
    assert Source(text).values.number(value) is not None


def test_an_exact_number_is_exact() -> None:
    match = Source("Taxi 42.8 USD").values.number(42.8)
    assert match is not None and match.kind == "exact"


# --- value: dates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("paid on 2020-03-03 by card", "2020-03-03"),
        ("paid on March 3rd 2020 by card", "March 3rd 2020"),
        ("paid 3/3/20 by card", "3/3/20"),
        ("paid 03.03.2020 by card", "03.03.2020"),
        ("于2020年3月3日付款", "2020年3月3日"),
        ("Bezahlt am 3. März 2020 in Berlin", "3. März 2020"),
        ("payé le 3 mars 2020 par carte", "3 mars 2020"),
        ("pagado el 3 de marzo de 2020 con tarjeta", "3 de marzo de 2020"),
        ("betaald op 3 maart 2020", "3 maart 2020"),
    ],
)
def test_a_date_is_found_in_any_written_form(text: str, written: str) -> None:
    match = Source(text).values.date("2020-03-03")
    assert match is not None and match.kind in ("exact", "normalised")
    assert spans_text(text, match.spans) == [written]


def test_an_ambiguous_date_accepts_either_day_month_order() -> None:
    source = Source("meeting 04/05/2021")
    assert source.values.date("2021-05-04") is not None  # day first
    assert source.values.date("2021-04-05") is not None  # month first
    assert source.values.date("2021-04-06") is None
    assert Source("meeting 25/12/2018").values.date("2018-12-25") is not None
    assert Source("meeting 25/12/2018").values.date("2018-25-12") is None  # not a date at all


def test_a_relative_date_is_derived_only_against_a_reference_date() -> None:
    text = "bought lunch yesterday for 12 dollars"
    derived = record_source(text, date(2020, 3, 4)).values.date("2020-03-03")
    assert derived is not None and derived.kind == "derived"
    assert spans_text(text, derived.spans) == ["yesterday"]
    assert record_source(text, date(2020, 3, 4)).values.date("2020-03-02") is None
    assert Source(text).values.date("2020-03-03") is None  # no reference: nothing to derive from


@pytest.mark.parametrize(
    ("text", "word", "meant"),
    [("Taxi gestern zum Bahnhof", "gestern", "2020-03-03"), ("dîner hier soir", "hier", "2020-03-03"),
     ("almuerzo ayer", "ayer", "2020-03-03"), ("Abendessen am Freitag", "Freitag", "2020-02-28")],
)  # fmt: skip
def test_a_relative_day_in_another_language_is_derived(text: str, word: str, meant: str) -> None:
    derived = record_source(text, date(2020, 3, 4)).values.date(meant)
    assert derived is not None and derived.kind == "derived"
    assert spans_text(text, derived.spans) == [word]
    assert Source(text).values.date(meant) is None


def test_last_friday_is_derived_from_the_reference() -> None:
    text = "Taxi last Friday, 30 EUR"
    derived = record_source(text, date(2024, 3, 20)).values.date("2024-03-15")  # a Wednesday
    assert derived is not None and derived.kind == "derived"


# --- walking the schema: rules, paths, what is searched -------------------------------------------


def test_defaults_by_type() -> None:
    props = EXPENSE.properties
    assert default_rule(props["who"]) == "quote"
    assert default_rule(props["amount"]) == "value"
    assert default_rule(props["date"]) == "value"
    assert default_rule(props["currency"]) == "none"
    assert default_rule({"type": "boolean"}) == "none"


def test_nested_values_are_checked_and_keyed_by_path() -> None:
    text = "Need 2 apples and bread from Lidl"
    data = {"items": [{"name": "apple", "quantity": 2}, {"name": "milk", "quantity": 1}], "store": "Lidl"}
    evidence = {e.path: e for e in ground(SHOPPING.body, data, text)}
    assert set(evidence) == {
        "items[0].name",
        "items[0].quantity",
        "items[1].name",
        "items[1].quantity",
        "store",
    }
    assert evidence["items[0].name"].kind == "normalised"  # x-base-form: "apples" is the plural of apple
    assert evidence["items[0].name"].quote == "apples"
    assert not evidence["items[1].name"].grounded
    assert evidence["items[1].quantity"].rule == "none"  # "1 when no number is given": derived by design


def test_a_value_only_in_the_schemas_description_is_not_grounded() -> None:
    body = {
        "type": "object",
        "properties": {"date": {"type": "string", "format": "date", "description": "e.g. 25/12/2018"}},
    }
    (evidence,) = ground(body, {"date": "2018-12-25"}, "Receipt: bread 2.10, milk 0.99")
    assert not evidence.grounded and evidence.kind == "none"


def test_a_value_only_in_the_reasoning_notes_is_not_grounded() -> None:
    notes = "The payer is probably Robert and the amount 17.5 dollars."
    data = {
        "who": "Robert",
        "date": None,
        "amount": 17.5,
        "currency": "USD",
        "category": None,
        "project": None,
    }
    verdict = judge(EXPENSE, "Lunch with the team, 12 USD", done(notes), done(json.dumps(data)))
    ungrounded = {e["path"] for e in verdict.evidence if not e["grounded"]}
    assert ungrounded == {"who", "amount"}
    assert verdict.status == "failed"  # amount is critical


def test_grounding_problems_lint_the_annotations() -> None:
    body = {
        "type": "object",
        "properties": {
            "paid": {"type": "boolean", "x-grounding": "value"},
            "kind": {"enum": ["a", "b"], "x-grounding": "value"},
            "n": {"type": "number", "x-grounding": "quote"},
            "who": {"type": "string", "x-grounding": "maybe"},
            "tags": {"type": "array", "items": {"type": "string"}, "x-grounding": "quote"},
            "mood": {"enum": ["a", "b"], "x-min-confidence": 1.5},
            "name": {"type": "string", "x-min-confidence": 0.5},  # any value has a probability now
            "lines": {"type": "array", "items": {"type": "string"}, "x-min-confidence": 0.5},
            "fine": {"type": "string", "x-grounding": "none"},
            "per_model": {"enum": ["a"], "x-min-confidence": {"m1": 0.5, "*": 0.9}},
            "bad_model": {"enum": ["a"], "x-min-confidence": {"m1": 0.5, "*": "high"}},
            "item": {"type": "string", "x-base-form": True},  # a quote string: fits
            "count": {"type": "integer", "x-base-form": True},
            "label": {"type": "string", "x-grounding": "none", "x-base-form": True},
            "money": {"enum": ["EUR", "USD"], "x-aliases": {"EUR": ["€"], "usd": ["$"]}},  # no such label
            "cash": {"type": "string", "x-aliases": {"EUR": ["€"]}},  # not an enum
            "coin": {"enum": ["EUR"], "x-aliases": {"EUR": ["€"]}},  # fits
            "inner": {"type": "object", "x-grounding": "none", "x-grounded-decoding": True,
                      "properties": {"sub": {"type": "string", "x-base-form": True}}},
        },
        "x-grounded-decoding": True,
    }  # fmt: skip
    problems = grounding_problems(body)
    assert len(problems) == 14, problems
    assert sum(p.startswith("inner:") for p in problems) == 1, problems  # its x-grounded-decoding
    for field in (
        "paid",
        "kind",
        "n",
        "who",
        "tags",
        "mood",
        "lines",
        "bad_model",
        "count",
        "label",
        "inner.sub",
    ):
        assert any(p.startswith(f"{field}:") for p in problems), field
    for name in ("expense", "contact", "shopping_list", "chat_tag"):
        assert grounding_problems(load_schema(name).body) == []


# --- statuses in judge ---------------------------------------------------------------------------


def done(text: str, finish: str = "stop") -> Completion:
    return Completion(text, finish, 10, 10, 0.1, "test")  # type: ignore[arg-type]


def expense(**change):
    data = {"who": "Maria", "date": "2024-03-14", "amount": 42.8, "currency": "USD", "category": "meals",
            "project": None}  # fmt: skip
    return json.dumps({**data, **change})


SOURCE = "Lunch on 14.03.2024, $42.80, paid by Maria"


def test_grounded_values_are_ok_with_evidence_per_value() -> None:
    verdict = judge(EXPENSE, SOURCE, done("notes"), done(expense()))
    assert verdict.status == "ok", verdict.errors
    by_path = {e["path"]: e for e in verdict.evidence}
    assert by_path["amount"]["quote"] == "42.80" and by_path["amount"]["kind"] == "normalised"
    assert by_path["date"]["quote"] == "14.03.2024"
    assert SOURCE[slice(*by_path["who"]["spans"][0])] == "Maria"
    assert by_path["currency"]["quote"] == "$" and by_path["currency"]["grounded"]  # x-aliases: read
    assert by_path["category"]["kind"] == "none" and by_path["category"]["grounded"]  # a choice
    assert "project" not in by_path  # null values need no evidence


def test_an_ungrounded_critical_value_fails_with_feedback() -> None:
    verdict = judge(EXPENSE, SOURCE, done("notes"), done(expense(amount=1.5)))
    assert verdict.status == "failed"
    assert verdict.feedback == ["amount 1.5 does not appear in the text; copy the amount as it is written"]


def test_an_ungrounded_optional_value_is_nulled_and_listed() -> None:
    verdict = judge(EXPENSE, SOURCE, done("notes"), done(expense(who="Bob", date="2018-12-25")))
    assert verdict.status == "partial"
    assert verdict.nulled == ["date", "who"]
    assert verdict.data["who"] is None and verdict.data["date"] is None and verdict.data["amount"] == 42.8
    assert (
        'who "Bob" does not appear in the text; copy the who as it is written, or null' in verdict.errors[0]
    )
    judged = [e for e in verdict.evidence if e["kind"] != "refused"]
    wrong = {e["path"]: e["value"] for e in judged if not e["grounded"]}
    assert wrong == {"who": "Bob", "date": "2018-12-25"}
    assert sorted(e["path"] for e in verdict.evidence if e["kind"] == "refused") == ["date", "who"]


def test_judge_reads_the_reference_date_from_meta() -> None:
    text = "Taxi yesterday, $30, Maria"
    output = expense(date="2024-03-14", amount=30, category="transport")
    assert judge(EXPENSE, text, done("n"), done(output)).status == "partial"
    derived = judge(EXPENSE, text, done("n"), done(output), meta={"reference_date": "2024-03-15"})
    assert derived.status == "ok", derived.errors
    assert next(e for e in derived.evidence if e["path"] == "date")["kind"] == "derived"
