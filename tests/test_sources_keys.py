"""Keys: one record per input line, never a silent merge, and every key storable (issue 7, points 5 and 8)."""

from __future__ import annotations

import pytest

from formwork.tasks.sources import read_records
from formwork.tasks.sources.keys import content_key
from tests.test_sources import assert_storable


def test_eight_jsonl_lines_with_null_and_colliding_ids_give_eight_records(write_jsonl) -> None:
    path = write_jsonl(
        [
            {"id": None, "text": "Taxi 20 EUR"},
            {"id": None, "text": "Lunch 12 USD"},
            {"id": 7, "text": "Hotel 300 GBP"},
            {"id": "7", "text": "Train 45 EUR"},
            {"text": "Coffee 3 EUR"},
            {"id": "line-5", "text": "Bus 2 EUR"},  # the key line 5 was given (it has no id)
            {"id": 7, "text": "Parking 9 EUR"},
            {"id": "", "text": "Fuel 60 EUR"},
        ]
    )
    records = list(read_records(path))
    assert len(records) == 8
    assert_storable(records)
    assert [r.text for r in records][:2] == ["Taxi 20 EUR", "Lunch 12 USD"]
    assert [r.key for r in records[:3]] == [content_key("Taxi 20 EUR"), content_key("Lunch 12 USD"), "7"]
    assert "None" not in {r.key for r in records}
    assert [r.problem for r in records[:3]] == [None, None, None]
    assert records[3].key == "line-4" and records[3].problem == "line 4: id '7' collides with line 3"
    assert records[4].key == content_key("Coffee 3 EUR") and records[4].problem is None
    assert records[5].key == "line-5" and records[5].problem is None  # no id took it
    assert records[6].problem == "line 7: id '7' collides with line 3"
    assert records[7].key == content_key("Fuel 60 EUR") and records[7].meta["line"] == 8


def test_a_line_inserted_above_id_less_lines_makes_no_new_record(write_jsonl, db_url) -> None:
    """Issue 20 point 10: id-less lines were keyed by line number, so one line inserted at the top
    made every line after it a new record, extracted again (a paid call for an unchanged text)."""
    from formwork.db.session import session_factory
    from formwork.db.store import store_records

    lines = [{"text": "Taxi 20 EUR"}, {"text": "Lunch 12 USD"}, {"text": "Taxi 20 EUR"}]
    before = list(read_records(write_jsonl(lines)))
    after = list(read_records(write_jsonl([{"text": "Hotel 300 GBP"}, *lines])))
    assert [r.key for r in after[1:]] == [r.key for r in before]  # the repeated text: key~2 both times
    assert [r.meta["line"] for r in after] == [1, 2, 3, 4]
    with session_factory(db_url)() as session:
        first = store_records(session, "in.jsonl", before)
        second = store_records(session, "in.jsonl", after)
    assert second[1:] == first and second[0] not in first


def test_a_row_inserted_above_id_less_csv_rows_moves_no_key(tmp_path) -> None:
    """The CSV form of issue 20 point 10: rows without an id were keyed by row number."""
    path = tmp_path / "in.csv"
    rows = ["Taxi 20 EUR", "Lunch 12 USD", "Taxi 20 EUR"]
    path.write_text("id,text\n" + "".join(f",{r}\n" for r in rows))
    before = list(read_records(path))
    path.write_text("text\nHotel 300 GBP\n" + "".join(f"{r}\n" for r in rows))  # no id column at all
    after = list(read_records(path))
    assert [r.key for r in after[1:]] == [r.key for r in before] and after[0].key not in [
        r.key for r in before
    ]
    assert [r.meta["row"] for r in after] == [2, 3, 4, 5] and before[1].text == "Lunch 12 USD"


def test_csv_rows_with_colliding_ids_each_give_a_record(tmp_path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("id,text\n7,Taxi 20 EUR\n7,Lunch 12 USD\n,Hotel 300 GBP\n8,Bus 2 EUR\n")
    records = list(read_records(path))
    assert [r.key for r in records] == ["7", "row-3", content_key("Hotel 300 GBP"), "8"]
    assert records[1].problem == "row 3: id '7' collides with row 2"
    assert [r.problem for r in records if r.key != "row-3"] == [None, None, None]


@pytest.mark.parametrize(
    ("raw_id", "reason"),
    [
        ('"\\ud800"', "the id is not valid Unicode (a lone surrogate)"),
        ('"a\\u0000b"', "the id contains a NUL character"),
        ('"' + "x" * 250 + '"', "the id has 250 characters; a key holds at most 200"),
        ("[1, 2]", "the id must be a string or a number, not list"),
        ("true", "the id must be a string or a number, not bool"),
    ],
)
def test_an_unstorable_id_gets_a_safe_key_and_a_problem(write_jsonl, raw_id: str, reason: str) -> None:
    path = write_jsonl([f'{{"id": {raw_id}, "text": "Taxi 20 EUR"}}', {"id": "ok", "text": "Bus 2 EUR"}])
    bad, good = read_records(path)
    assert_storable([bad, good])
    assert bad.problem == f"line 1: {reason}" and bad.text == "Taxi 20 EUR"
    assert (good.key, good.problem) == ("ok", None)


def test_safe_keys_are_stable_and_distinct(write_jsonl) -> None:
    """Two different bad ids never share a key, and reading again gives the same keys (resume)."""
    long_a, long_b = "a" * 300, "a" * 299 + "b"
    path = write_jsonl(
        [{"id": long_a, "text": "x"}, {"id": long_b, "text": "y"}, {"id": long_a, "text": "z"}]
    )
    first = list(read_records(path))
    assert [r.key for r in first] == [r.key for r in read_records(path)]
    assert_storable(first)
    assert first[0].key.startswith("a" * 20) and first[0].key != first[1].key
    assert "collides with line 1" in first[2].problem


def test_numeric_ids_compare_as_text(write_jsonl) -> None:
    records = list(read_records(write_jsonl([{"id": 7.0, "text": "x"}, {"id": 7, "text": "y"}])))
    assert records[0].key == "7" and records[1].problem == "line 2: id '7' collides with line 1"


def test_a_json_number_too_long_for_python_is_a_broken_line_not_a_crash(write_jsonl) -> None:
    path = write_jsonl(['{"id": 1' + "0" * 5000 + ', "text": "x"}', "[" * 100_000, {"text": "fine"}])
    records = list(read_records(path))
    assert [r.key for r in records] == ["line-1", "line-2", content_key("fine")]
    assert "line 1 is not valid JSON" in records[0].problem
    assert "line 2 is not valid JSON" in records[1].problem
    assert records[2].problem is None
