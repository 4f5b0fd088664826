"""Inputs that used to hang a run or stop it with a traceback (issue 54, points 18 and 26): each is read
in bounded time, or stored as a failed record that says why while the other lines are read."""

from __future__ import annotations

import time

import pytest

from formwork.tasks.sources import SourceProblem, read_records

# 26: a CSV header of a million columns was checked for repeats in quadratic time (hours)


def test_a_csv_header_of_very_many_columns_is_checked_in_linear_time(tmp_path) -> None:
    path = tmp_path / "wide.csv"
    columns = [f"c{i}" for i in range(300_000)]
    path.write_text(",".join(["text", *columns]) + "\n" + "Taxi 20 EUR" + "," * len(columns) + "\n")
    started = time.monotonic()
    (record,) = read_records(path)
    assert time.monotonic() - started < 20, "300,000 columns: 4.5e10 comparisons before, one pass now"
    assert record.text == "Taxi 20 EUR" and record.problem is None and len(record.meta) == len(columns) + 1


def test_a_row_of_very_many_trailing_commas_is_trimmed_in_linear_time(tmp_path) -> None:
    path = tmp_path / "commas.csv"
    path.write_text("text,id\n" + "Taxi 20 EUR,1" + "," * 300_000 + "\n")
    started = time.monotonic()
    (record,) = read_records(path)
    assert time.monotonic() - started < 20, "a list copied once per trailing comma was quadratic"
    assert (record.key, record.text, record.problem) == ("1", "Taxi 20 EUR", None)


def test_a_csv_without_text_among_many_columns_is_refused_in_one_short_line(tmp_path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(100_000)) + "\n")
    with pytest.raises(SourceProblem, match="needs a 'text' column") as refused:
        read_records(path)
    assert len(str(refused.value)) < 1_000 and "and 99980 more" in str(refused.value)


# 18: nesting past any recursive walk's reach


def test_a_jsonl_line_nested_600_deep_is_a_failed_record_and_the_other_lines_are_read(tmp_path) -> None:
    path = tmp_path / "deep.jsonl"
    deep = '{"a": ' * 600 + '"x"' + "}" * 600  # json.loads reads it; cleaning it recursed past the limit
    path.write_text(
        '{"id": "1", "text": "Taxi 20 EUR"}\n'
        f'{{"id": "2", "text": "Lunch 12 EUR", "extra": {deep}}}\n'
        '{"id": "3", "text": "Bus 2 EUR", "extra": {"kept": [1, {"two": 2}]}}\n'
    )
    first, nested, third = read_records(path)
    assert (first.key, first.problem, third.key, third.problem) == ("1", None, "3", None)
    assert third.meta == {"extra": {"kept": [1, {"two": 2}]}}
    assert (
        nested.key == "2"
        and nested.problem == "line 2 nests its fields more than 64 levels deep; flatten them"
    )
    assert nested.meta == {}, "nothing deep is kept for a recursive walk to meet"
