"""The bundled gold sets can certify: every field named, ids unique per schema, big enough (issue 26
deliver 2, issue 29 deliver 3), and the checker refuses a gold set that breaks any of these."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
spec = importlib.util.spec_from_file_location("gold_check", ROOT / "benchmarks" / "gold_check.py")
gold_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gold_check)

FULL = {
    "who": "Ana",
    "date": "2025-05-09",
    "amount": 15,
    "currency": "EUR",
    "category": "meals",
    "project": None,
}


def write(folder: Path, name: str, *rows: dict) -> None:
    (folder / name).write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )


def test_the_bundled_gold_sets_pass(capsys) -> None:
    assert gold_check.check(gold_check.GOLD, counts=True) == 0
    sizes = {line.split(":")[0]: int(line.split()[1]) for line in capsys.readouterr().out.splitlines()}
    assert sizes["expense"] >= 200 and sizes["contact"] >= 200


def test_a_row_that_leaves_a_field_out_is_refused_with_its_line_and_field(tmp_path, capsys) -> None:
    omitted = {key: value for key, value in FULL.items() if key != "category"}
    write(tmp_path, "expense.jsonl", {"id": "a", "text": "Lunch 15 EUR", "gold": FULL},
          {"id": "b", "text": "Lunch 15 EUR", "gold": omitted})  # fmt: skip
    assert gold_check.check(tmp_path) == 1
    assert capsys.readouterr().out.strip() == (
        "expense.jsonl:2 b: field 'category' not named (write null when the text has none)"
    )


def test_an_id_used_in_both_files_of_a_schema_is_refused(tmp_path, capsys) -> None:
    write(tmp_path, "expense.jsonl", {"id": "x-1", "text": "Lunch 15 EUR", "gold": FULL})
    write(
        tmp_path,
        "expense_zh_ja.jsonl",
        {"id": "x-1", "text": "午饭 15 元", "gold": FULL | {"currency": "CNY"}},
    )
    assert gold_check.check(tmp_path) == 1
    assert "id 'x-1' already used at expense.jsonl:1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"date": "09/05/2025"}, "is not an ISO date"),
        ({"currency": "PLN"}, "is not one of"),
        ({"who": "A" * 81}, "is longer than 80"),
    ],
)
def test_a_value_the_schema_cannot_hold_is_refused(tmp_path, capsys, change, problem) -> None:
    write(tmp_path, "expense.jsonl", {"id": "a", "text": "Lunch 15 EUR", "gold": FULL | change})
    assert gold_check.check(tmp_path) == 1
    assert problem in capsys.readouterr().out


def test_a_phone_outside_the_schemas_pattern_and_a_bad_reference_date_are_refused(tmp_path, capsys) -> None:
    gold = {"name": "Mehmet", "email": None, "phone": "0221 / 123 456", "organization": None}
    write(tmp_path, "contact.jsonl", {"id": "c", "text": "Mehmet, 0221 / 123 456", "gold": gold,
                                       "meta": {"reference_date": "yesterday"}})  # fmt: skip
    assert gold_check.check(tmp_path) == 1
    out = capsys.readouterr().out
    assert "does not match" in out and "reference_date 'yesterday' is not an ISO date" in out


def test_a_free_reply_the_model_writes_may_be_left_out(tmp_path) -> None:
    """chat_tag's `reply` is `x-grounding: none`: no text holds its answer, so no gold can state it."""
    write(tmp_path, "chat_tag.jsonl", {"id": "t", "text": "Maria: I got the job!",
                                        "gold": {"speaker": "Maria", "emotion": "happy"}})  # fmt: skip
    assert gold_check.check(tmp_path) == 0
