"""Solved examples in a schema (`x-examples`): checked at load, shown before the record, never a source.

The prompts of a schema without examples are pinned byte for byte (by hash): the shipped calibrations are
keyed by the prompts and the schema's digest (tasks/evaluation/key.py), so a change here would silently
void them. A schema with examples is another schema: its digest and prompts differ.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from formwork.schemas.problems import SchemaProblem
from formwork.schemas.registry import load_schema, schema_from_body
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines.base import Completion
from formwork.tasks.evaluation.key import pipeline_version
from formwork.tasks.modes import SINGLE, single_pass_messages
from formwork.tasks.prompts import formatting_messages, prompt_hash, reasoning_messages
from formwork.tasks.validate import judge

PIN_TEXT = "Lunch with Ana at Cafe Luz, 23.50 EUR on 2024-03-15 (project Apollo)"
# Per built-in, as at 39f4d3d (before examples existed): the body's digest, then the hashes of the
# reasoning, formatting and single-pass prompts of PIN_TEXT.
PINNED = {
    "chat_tag": ("f0caec68a926887e", ["d24f5013f05357d1", "565993b216503b6c", "71fd3838fb162f56",
                                      "681b9a4be8eb018f", "ee51b218dadc92bf"]),
    "contact": ("c2d55fe93c1e25ee", ["c0bf599c8e554f65", "2ca8da459f1a8f67", "931e90aca0e3d846",
                                     "012b4840ad9bf81b", "6e6407721a27ffbf"]),
    "expense": ("8c029d5244bde350", ["78a1057670defbdc", "6e15f3316bb58de4", "94664484f20e3231",
                                     "f7d55f232b21f80e", "728ee229d67f1274"]),
    "receipt": ("6cbdaf8b4953f66f", ["5b7b4c5a9277bc60", "7f2f44bf63e4b4e9", "3222514b86d18696",
                                     "79bdb8b29a516ef3", "5e7220fa286c8314"]),
    "shopping_list": ("a403711e5cbee472", ["8acbad97be1cbb1e", "b635d334eca742b6", "e6d1fe8c05f2366d",
                                           "6a0fae7cf158b9ab", "6152af0cab8c45e3"]),
}  # fmt: skip
PINNED_PROMPTS = "27c73fbf"  # the prompts' part of pipeline_version() as at 39f4d3d

MARIA = {"who": "Maria", "date": "2024-05-02", "amount": 42.8, "currency": "USD", "category": "meals",
         "project": "Apollo"}  # fmt: skip
EXAMPLES = [
    {"text": "Paid $42.80 for the team lunch on May 2, 2024 - Maria. Bill to Apollo.", "answer": MARIA},
    {"text": "Taxi to the airport, 30 EUR", "answer": {"who": None, "date": None, "amount": 30,
                                                      "currency": "EUR", "category": "transport",
                                                      "project": None}},
]  # fmt: skip
RECORD = "Sam took a taxi, 12 EUR, for project Hermes."


def _prompts(schema: Any, text: str) -> list[Any]:
    return [
        reasoning_messages(schema, text),
        formatting_messages(schema, text, "notes", ["wrong"]),
        *(single_pass_messages(schema, text, mode) for mode in SINGLE),
    ]


def _expense_with(examples: Any = None) -> Any:
    body = {**load_schema("expense").body, "x-examples": EXAMPLES if examples is None else examples}
    return schema_from_body(body, "expense-examples.json")


@pytest.mark.parametrize("name", sorted(PINNED))  # the built-ins calibrations were shipped for
def test_builtin_prompts_unchanged(name: str) -> None:
    schema = load_schema(name)
    assert (schema.digest[:16], [prompt_hash(p) for p in _prompts(schema, PIN_TEXT)]) == PINNED[name]
    assert pipeline_version().rsplit(".p", 1)[1] == PINNED_PROMPTS


def test_examples_give_another_digest_and_put_the_fixed_part_first() -> None:
    plain, taught = load_schema("expense"), _expense_with()
    assert taught.digest != plain.digest
    assert [prompt_hash(p) for p in _prompts(taught, PIN_TEXT)] != PINNED["expense"][1]
    one = reasoning_messages(taught, RECORD)[1]["content"]
    other = reasoning_messages(taught, PIN_TEXT)[1]["content"]
    fixed = one[: one.index("Text:\n")]
    assert other.startswith(fixed)  # the same prefix for every record: the cache evaluates it once
    assert EXAMPLES[0]["text"] in fixed and json.dumps(MARIA) in fixed
    assert fixed.index("Find these fields") < fixed.index("Example 1 text") < fixed.index("Example 2 text")
    assert RECORD not in fixed and one.endswith(reasoning_messages(plain, RECORD)[1]["content"][-60:])


@pytest.mark.parametrize(
    ("examples", "says"),
    [
        ([{"text": "Lunch $5", "answer": {**MARIA, "amount": "five"}}], "x-examples[0].answer does not fit"),
        ([EXAMPLES[0], {"text": "Lunch, $5 by Mario", "answer": {**MARIA, "amount": 5}}],
         "x-examples[1].answer.who: 'Maria' does not occur in the example's text"),
        ([{"text": "Lunch $5", "answer": MARIA, "note": "x"}], "x-examples[0]: x-examples is a list"),
        ([{"text": "  ", "answer": MARIA}], "x-examples[0].text must be"),
        ({"text": "Lunch", "answer": MARIA}, "x-examples is a list"),
        ([], "at least one"),
    ],
)  # fmt: skip
def test_broken_examples_refused_with_what_to_fix(examples: Any, says: str) -> None:
    with pytest.raises(SchemaProblem) as refused:
        _expense_with(examples)
    message = str(refused.value)
    assert says in message and "\n" not in message and message.startswith("expense-examples.json: ")


def test_labels_and_normal_forms_need_not_be_quoted() -> None:
    """`meals` (an enum label) and 2024-05-02 (a date's normal form) are not in the first example's text,
    and need not be: only copied strings must occur."""
    assert "meals" not in EXAMPLES[0]["text"] and "2024-05-02" not in EXAMPLES[0]["text"]
    assert len(_expense_with().body["x-examples"]) == 2


def _done(text: str) -> Completion:
    return Completion(text, "stop", 10, 10, 0.1, "test")


def test_value_copied_from_an_example_is_refused() -> None:
    taught = _expense_with()
    copied = {**MARIA, "date": None, "amount": 12, "currency": "EUR", "category": "transport"}
    verdict = judge(taught, RECORD, _done("notes"), _done(json.dumps(copied)))
    assert verdict.data is not None and verdict.data["who"] is None and verdict.data["project"] is None
    assert {"who", "project"} <= set(verdict.nulled)
    honest = {**copied, "who": "Sam", "project": "Hermes"}
    assert judge(taught, RECORD, _done("notes"), _done(json.dumps(honest))).data == honest


def test_example_text_never_becomes_a_candidate() -> None:
    """Grounded decoding offers what the record's text backs: Sam and Hermes, never the examples'
    Maria or Apollo, though the prompt shows them (and the notes may mention them)."""
    taught = _expense_with()
    grammar = ExtractOptions().formatting_grammar(taught, RECORD, None, notes="Maria paid, for Apollo")
    who, project = grammar["properties"]["who"]["enum"], grammar["properties"]["project"]["enum"]
    assert "Sam" in who and "Hermes" in project
    offered = json.dumps(grammar)
    assert "Maria" not in offered and "Apollo" not in offered


def test_a_long_lists_header_reading_shows_the_examples_header_fields_only() -> None:
    """The header of a long receipt is read under its header fields alone; an example's items there
    would ask for a field that reading has not."""
    from formwork.tasks.long.itemwise import header_schema

    answer = {"merchant": "Kiosk 9", "date": None, "total": 3.5, "currency": "EUR",
              "items": [{"description": "Tea", "quantity": 1, "amount": 3.5}]}  # fmt: skip
    example = {"text": "Kiosk 9\nTea 1 x 3.50\nTotal EUR 3.50", "answer": answer}
    whole = schema_from_body({**load_schema("receipt").body, "x-examples": [example]}, "receipt.json")
    assert '"items": [{"description": "Tea"' in reasoning_messages(whole, RECORD)[1]["content"]
    header = reasoning_messages(header_schema(whole), RECORD)[1]["content"]
    assert (
        'Example 1 answer: {"merchant": "Kiosk 9", "date": null, "total": 3.5, "currency": "EUR"}' in header
    )
