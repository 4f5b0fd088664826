"""Every input line becomes a record, bad ones with a problem that says what is wrong."""

from __future__ import annotations

import json

import pytest

from formwork.tasks.sources import SourceProblem, read_records
from formwork.tasks.sources.keys import content_key


def test_jsonl_keeps_bad_lines_as_records_with_a_problem(write_jsonl) -> None:
    path = write_jsonl(
        [
            {"id": "a", "text": "Lunch 12 USD", "team": "ops"},
            "this is not json",
            {"id": "b", "text": "   "},
            {"id": "c", "body": "no text field"},
            "[1, 2]",
            {"text": "no id"},
        ]
    )
    records = list(read_records(path))
    assert [r.key for r in records] == ["a", "line-2", "b", "c", "line-5", content_key("no id")]
    assert records[0].problem is None and records[0].meta == {"team": "ops"}
    assert "line 2 is not valid JSON" in records[1].problem
    assert "the text is empty" in records[2].problem
    assert "has no string 'text'" in records[3].problem
    assert "not a JSON object" in records[4].problem
    assert records[5].problem is None


def test_invalid_utf8_and_nul_bytes_are_cleaned_with_a_warning(write_jsonl) -> None:
    path = write_jsonl([b'{"id": "x", "text": "caf\xe9 4 EUR"}', {"id": "y", "text": "a\u0000b"}])
    x, y = read_records(path)
    assert x.text == "caf\ufffd 4 EUR" and "invalid UTF-8" in x.meta["warnings"][0]
    assert y.text == "ab" and "NUL bytes were removed" in y.meta["warnings"]


def test_csv_needs_a_text_column(tmp_path) -> None:
    good = tmp_path / "in.csv"
    good.write_text("id,text,source\n1,Taxi 20 EUR,mail\n2,,mail\n")
    first, second = read_records(good)
    assert (first.key, first.text, first.meta) == ("1", "Taxi 20 EUR", {"source": "mail"})
    assert "empty" in second.problem
    bad = tmp_path / "bad.csv"
    bad.write_text("id,body\n1,x\n")
    with pytest.raises(SourceProblem, match="needs a 'text' column"):
        list(read_records(bad))


def test_folder_of_text_files(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("Jane Doe, jane@example.org")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.eml").write_text("")
    (tmp_path / "ignored.pdf").write_bytes(b"%PDF")
    records = list(read_records(tmp_path))
    assert [r.key for r in records] == ["a.txt", "sub/b.eml"]
    assert records[1].problem and "empty" in records[1].problem


def test_a_huge_text_is_kept_whole_with_a_warning_that_it_is_read_in_parts(write_jsonl) -> None:
    text = "Taxi 20 EUR. " * 80_000  # about 1 MB
    (record,) = read_records(write_jsonl([{"id": "big", "text": text}]))
    assert record.text == text and record.problem is None
    assert record.meta["warnings"] == [
        f"the text has {len(text)} characters, more than one prompt shows (6000): read in parts, or cut"
    ]


@pytest.mark.parametrize(
    ("name", "message"), [("missing.jsonl", "does not exist"), ("x.parquet", "unknown input")]
)
def test_unusable_source_is_refused(tmp_path, name: str, message: str) -> None:
    if name.endswith(".parquet"):
        (tmp_path / name).write_bytes(b"PAR1")
    with pytest.raises(SourceProblem, match=message):
        read_records(tmp_path / name)


def assert_storable(records: list) -> None:
    """What every store can hold: unique keys of valid UTF-8 text, no NUL, at most 200 characters; the same
    for the text and the meta (PostgreSQL refuses NUL and lone surrogates in text and JSONB)."""
    keys = [r.key for r in records]
    assert len(set(keys)) == len(keys), keys
    for record in records:
        assert 0 < len(record.key) <= 200 and "\x00" not in record.key, record.key
        record.key.encode("utf-8")  # raises on a lone surrogate
        assert "\x00" not in record.text, record
        record.text.encode("utf-8")
        meta = json.dumps(record.meta, ensure_ascii=False, allow_nan=False)
        assert "\x00" not in meta and "\\u0000" not in meta, meta
        meta.encode("utf-8")
