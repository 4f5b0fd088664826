"""Bytes as real exports write them: byte-order marks, bad bytes, surrogates, huge CSV cells, broken quotes
(issue 7, points 6 and 8)."""

from __future__ import annotations

import codecs

import pytest

from formwork.tasks.sources import SourceProblem, read_records
from tests.test_sources import assert_storable

BOM = codecs.BOM_UTF8


def test_a_csv_with_a_byte_order_mark_is_read(tmp_path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes(BOM + "text,id\r\nTaxi 20 €,1\r\nLunch 12 USD,2\r\n".encode())
    records = list(read_records(path))
    assert [(r.key, r.text, r.problem) for r in records] == [
        ("1", "Taxi 20 €", None),
        ("2", "Lunch 12 USD", None),
    ]


def test_a_jsonl_with_a_byte_order_mark_reads_its_first_line(write_jsonl) -> None:
    path = write_jsonl([BOM + b'{"id": "a", "text": "Taxi 20 EUR"}', {"id": "b", "text": "Bus 2 EUR"}])
    first, second = read_records(path)
    assert (first.key, first.text, first.problem) == ("a", "Taxi 20 EUR", None)
    assert "warnings" not in first.meta and second.problem is None


def test_a_text_file_with_a_byte_order_mark_loses_the_mark(tmp_path) -> None:
    (tmp_path / "note.txt").write_bytes(BOM + b"Jane Doe, jane@example.org")
    (record,) = read_records(tmp_path)
    assert record.text == "Jane Doe, jane@example.org"


def test_a_utf16_file_is_refused_with_a_clear_message(tmp_path) -> None:
    path = tmp_path / "powershell.jsonl"
    path.write_bytes('{"id": "a", "text": "x"}\n'.encode("utf-16"))
    with pytest.raises(SourceProblem, match=r"UTF-16.*save it as UTF-8"):
        list(read_records(path))


def test_lone_surrogates_and_nuls_are_cleaned_in_text_and_meta(write_jsonl) -> None:
    path = write_jsonl(
        ['{"id": "s", "text": "a\\ud800b", "team": "o\\u0000ps", "n\\udc00": [1.5, "\\ud83d"]}']
    )
    (record,) = read_records(path)
    assert_storable([record])
    assert record.text == "a\ufffdb" and record.problem is None
    assert record.meta["team"] == "ops" and record.meta["n\ufffd"] == [1.5, "\ufffd"]
    assert "lone surrogates were replaced with U+FFFD" in record.meta["warnings"]
    assert "NUL bytes were removed" in record.meta["warnings"]


def test_a_csv_cell_over_128_kib_is_read_whole(tmp_path) -> None:
    big = "Taxi 20 EUR. " * 20_000  # 260 KB, past the csv module's default field limit
    path = tmp_path / "big.csv"
    path.write_text(f'id,text\n1,"{big}"\n2,Bus 2 EUR\n')
    first, second = read_records(path)
    assert first.text == big and first.problem is None
    assert (second.key, second.text) == ("2", "Bus 2 EUR")


def test_bad_bytes_in_one_csv_row_warn_on_that_row_only(tmp_path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_bytes(b"id,text\n1,Caf\xe9 4 EUR\n2,Bus\x00 2 EUR\n3,Taxi 20 EUR\n")
    first, second, third = read_records(path)
    assert first.text == "Caf\ufffd 4 EUR" and first.meta["warnings"] == [
        "invalid UTF-8 bytes were replaced with U+FFFD"
    ]
    assert second.text == "Bus 2 EUR" and second.meta["warnings"] == ["NUL bytes were removed"]
    assert "warnings" not in third.meta


def test_a_broken_csv_row_is_one_problem_and_the_rows_after_it_are_read(tmp_path) -> None:
    path = tmp_path / "broken.csv"
    path.write_text(
        "id,text,source\n"
        '1,"Taxi 20 EUR,mail\n'  # a quote that never closes: it must not swallow the rest of the file
        "2,Lunch 12 USD,chat\n"
        "3,Hotel\n"  # a field short
        '4,"Bus" 2 EUR,mail\n'  # text after a closing quote
        '5,"Train\n45 EUR",mail\n'  # a real multi-line cell
        "6,Fuel 60 EUR,mail,,\n"  # empty trailing cells (a trailing comma) are harmless
    )
    records = list(read_records(path))
    assert_storable(records)
    assert [r.key for r in records] == ["row-2", "2", "row-4", "row-5", "5", "6"]
    assert "row 2" in records[0].problem and records[0].text == '1,"Taxi 20 EUR,mail'
    assert records[1].problem is None and records[1].text == "Lunch 12 USD"
    assert records[2].problem == "row 4 has 2 fields; the header has 3"
    assert "row 5" in records[3].problem
    assert records[4].text == "Train\n45 EUR" and records[4].problem is None
    assert records[4].meta["warnings"] == ["the row runs over lines 6-7"]
    assert records[5].problem is None and records[5].meta == {"source": "mail"}


def test_a_csv_header_with_a_repeated_column_is_refused(tmp_path) -> None:
    path = tmp_path / "twice.csv"
    path.write_text("id,text,text\n1,a,b\n")
    with pytest.raises(SourceProblem, match="column 'text' appears twice"):
        read_records(path)
