"""Grounded decoding's candidates: what the reader finds per field type, bounded, and nothing else."""

from __future__ import annotations

from datetime import date

from formwork.schemas.registry import load_schema
from formwork.tasks.grounding import candidates
from formwork.tasks.grounding.candidates import grounded_body, quote_spans
from formwork.tasks.grounding.evidence import ground

BODY = {
    "type": "object",
    "properties": {
        "amount": {"type": ["number", "null"]},
        "count": {"type": "integer"},
        "day": {"type": ["string", "null"], "format": "date"},
        "who": {"type": ["string", "null"], "maxLength": 20},
        "currency": {"enum": ["EUR", "USD", None]},
        "note": {"type": ["string", "null"], "x-grounding": "none"},
    },
}


def test_numbers_in_every_written_form_become_json_numbers_and_dates_iso() -> None:
    text = "Dinner 1.234,50 EUR for 3, tip forty-two, yesterday, paid 2024-03-03"
    body = grounded_body(BODY, text, date(2024, 3, 10))
    amounts = body["properties"]["amount"]["enum"]
    assert 1234.5 in amounts and 3 in amounts and None in amounts
    assert all(type(v) in (int, float) for v in amounts if v is not None)
    assert 3 in body["properties"]["count"]["enum"] and 1234.5 not in body["properties"]["count"]["enum"]
    days = body["properties"]["day"]["enum"]
    assert "2024-03-03" in days and "2024-03-09" in days and None in days  # "yesterday", resolved
    assert body["properties"]["currency"] == BODY["properties"]["currency"]  # enums: unchanged
    assert body["properties"]["note"] == BODY["properties"]["note"]  # x-grounding none: unchanged


def test_every_candidate_is_one_the_grounding_check_accepts() -> None:
    text = "Taxi to the airport, 35 EUR on 3 March 2024 (Tom Baker)\ntom@example.com +44 20 7946 0958"
    body = grounded_body(BODY, text, date(2024, 3, 10))
    for key in ("amount", "day", "who"):
        for value in body["properties"][key]["enum"]:
            if value is not None:
                (proof,) = ground(BODY, {key: value}, text, date(2024, 3, 10))
                assert proof.grounded, (key, value)


def test_quote_spans_stay_inside_a_line_up_to_max_length_with_emails_and_phones() -> None:
    spans = quote_spans("Tom Baker, Acme Ltd\nCall +44 20 7946 0958 or tom@example.com", 20)
    assert {"Tom Baker", "Acme Ltd", "Tom Baker, Acme Ltd", "+44 20 7946 0958", "tom@example.com"} <= set(
        spans
    )
    assert not any("\n" in s for s in spans) and all(len(s) <= 20 for s in spans if "@" not in s)
    assert "Ltd Call" not in spans  # never across lines


def test_cjk_text_is_cut_into_character_spans() -> None:
    spans = quote_spans("收款人：王小明\n金额 56 元", 10)
    assert {"王小明", "王小", "小明", "王", "收款人"} <= set(spans) and "金额" in spans
    assert not any("明" in s and "金" in s for s in spans)  # never across lines


def test_candidate_sets_are_bounded_on_long_texts(monkeypatch) -> None:
    text = " ".join(f"word{i} {i}.5" for i in range(3000))  # ~6,000 numbers and words on one line
    body = grounded_body(BODY, text)
    assert len(body["properties"]["who"]["enum"]) <= candidates.MAX_QUOTES + 1
    assert len(body["properties"]["amount"]["enum"]) <= candidates.MAX_VALUES + 1


def test_a_field_the_text_cannot_back_may_only_be_null() -> None:
    body = grounded_body(BODY, "nothing here at all")
    assert body["properties"]["amount"] == {"type": "null"} and body["properties"]["day"] == {"type": "null"}
    assert body["properties"]["count"] == BODY["properties"]["count"]  # not nullable: left as is


def test_nested_line_items_get_their_own_candidates() -> None:
    receipt = load_schema("receipt").grammar_body
    text = "2 x Coffee 3.50\nTOTAL 7.00"
    body = grounded_body(receipt, text)
    assert body != receipt and "7" in str(body) and "3.5" in str(body)


def test_a_field_marked_x_grounding_none_keeps_its_node_in_the_schemas_own_body() -> None:
    """The grammar body drops `x-` keys, so the rules must come from the checked body: shopping_list's
    quantity (`none`, "1 when no number is given") would otherwise be narrowed to the text's numbers."""
    from formwork.tasks.calls import ExtractOptions

    schema = load_schema("shopping_list")
    grammar = ExtractOptions(grounded_decoding=True).formatting_grammar(schema, "buy 2 eggs and milk", None)
    item = grammar["properties"]["items"]["items"]["properties"]
    assert "enum" not in item["quantity"] and item["quantity"]["minimum"] == 1
    assert "enum" in item["name"] and "enum" in grammar["properties"]["store"]


def test_a_base_form_field_is_offered_the_base_form_the_checker_accepts() -> None:
    """x-base-form: the text's "eggs" backs "egg"; a grammar without "egg" would forbid the right answer."""
    schema = load_schema("shopping_list")
    text = "2 Eier und Milch, then 3 eggs"
    names = grounded_body(schema.grammar_body, text, annotated=schema.checked_body)
    offered = names["properties"]["items"]["items"]["properties"]["name"]["enum"]
    assert {"egg", "Ei", "eggs", "Eier"} <= set(offered), offered
    plain = grounded_body(schema.grammar_body, text)  # without the annotations: no base forms
    assert "egg" not in plain["properties"]["items"]["items"]["properties"]["name"]["enum"]
    data = {"items": [{"name": "egg", "quantity": 3}, {"name": "Ei", "quantity": 2}], "store": None}
    backed = {e.path: e.grounded for e in ground(schema.checked_body, data, text)}
    assert backed["items[0].name"] and backed["items[1].name"]
