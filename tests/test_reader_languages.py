"""Numbers and dates in the forms users write in every language, each reading exact: a true case and
a false one side by side; and the reference date, from the record's source or from the text itself."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from sqlalchemy import Column, Date, Integer, MetaData, Table, Text, create_engine, insert

from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.grounding.evidence import Source
from formwork.tasks.grounding.values import ValueFinder
from formwork.tasks.sources import read_records
from formwork.tasks.sources.sql import read_sql
from formwork.tasks.validate import judge

EXPENSE = load_schema("expense")
REF = date(2025, 10, 8)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "backed", "not_backed"),
    [
        ("Anna paid forty-two dollars", 42, 40),
        ("two hundred euros", 200, 2000),
        ("vingt-cinq euros", 25, 20),
        ("quatre-vingt-dix-neuf euros", 99, 80),
        ("zweiundvierzig Euro", 42, 2),
        ("veinticinco euros", 25, 5),
        ("trenta euro", 30, 3),  # it
        ("vijfentwintig euro", 25, 5),  # nl
        ("one coffee, 3 EUR", 3, 1),  # a small number word alone is no amount
        ("the third coffee, 4 EUR", 4, 3),  # an ordinal is no amount
        ("午饭三百二", 320, 32),
        ("午饭三百二", 320, 3.2),
        ("四百九十九元", 499, 49),
        ("一千二百五十块", 1250, 1200),
        ("两千三百", 2300, 2003),
        ("六百元整", 600, 6),
        ("打车十二块五", 12.5, 125),
        ("打车十二块五", 12.5, 12),
        ("三元五角", 3.5, 35),
        ("借了两万", 20000, 2),
        ("花了1.2万元", 12000, 1.2),
        ("一百零五元", 105, 150),
        ("合計３千円", 3000, 3),
        ("ランチ1万2千円", 12000, 10000),
        ("三千五百円", 3500, 3005),
        ("全角の１２８０円", 1280, 128),
        ("我们一起吃饭，2人", 2, 1),  # 一 of 一起 ("together") is no amount
        ("第三个，5元", 5, 3),
        ("十二月五号 35元", 35, 12),  # a month is no amount
    ],
)
def test_numbers_in_words_and_native_numerals(text, backed, not_backed) -> None:
    finder = ValueFinder(text)
    assert finder.number(backed) is not None, finder.number_readings()
    assert finder.number(not_backed) is None


@pytest.mark.parametrize(
    ("text", "backed", "not_backed"),
    [
        ("昨晚打车", "2025-10-07", "2025-10-08"),
        ("昨天午饭", "2025-10-07", "2025-10-06"),
        ("前天的出租车", "2025-10-06", "2025-10-07"),
        ("大前天", "2025-10-05", "2025-10-06"),
        ("今天", "2025-10-08", "2025-10-07"),
        ("明天", "2025-10-09", "2025-10-08"),
        ("上周五", "2025-10-03", "2025-10-10"),
        ("本周一", "2025-10-06", "2025-09-29"),
        ("这周三", "2025-10-08", "2025-10-01"),
        ("上个星期天", "2025-10-05", "2025-10-12"),
        ("9月28日", "2025-09-28", "2024-09-28"),
        ("10月2日", "2025-10-02", "2010-02-08"),  # dateparser's misreading
        ("12月30日", "2024-12-30", "2025-12-30"),  # the nearest not after the reference
        ("8号", "2025-10-08", "2025-09-08"),
        ("20号", "2025-09-20", "2025-10-20"),
        ("上个月25号", "2025-09-25", "2025-10-25"),
        ("昨日のランチ", "2025-10-07", "2025-10-08"),
        ("一昨日", "2025-10-06", "2025-10-07"),
        ("先週の金曜日", "2025-10-03", "2025-10-10"),
        ("어제 점심", "2025-10-07", "2025-10-06"),
        ("지난주 금요일 택시", "2025-10-03", "2025-10-10"),  # last week's Friday, not this week's
        ("지난 주 월요일", "2025-09-29", "2025-10-06"),
        ("저번주 화요일", "2025-09-30", "2025-10-07"),
        ("이번 주 월요일", "2025-10-06", "2025-09-29"),
        ("다음주 화요일", "2025-10-14", "2025-10-07"),
        ("금요일에 택시", "2025-10-03", "2025-10-10"),  # bare: the nearest not after the reference
        ("yesterday", "2025-10-07", "2025-10-06"),
    ],
)
def test_cjk_relative_and_year_less_dates_against_the_reference(text, backed, not_backed) -> None:
    finder = ValueFinder(text, REF, "meta reference_date")
    match = finder.date(backed)
    assert match is not None and match.kind == "derived" and match.anchor == "meta reference_date"
    assert finder.date(not_backed) is None
    assert ValueFinder(text).date(backed) is None  # without a reference, none of them names a day


def test_the_digits_of_a_year_less_date_are_no_amount() -> None:
    assert ValueFinder("9月28日 打车 35 元").number(28) is None


# --- the reference date --------------------------------------------------------------------------


def _judge(text: str, answer: dict, meta: dict | None = None, field: str = "reference_date"):
    notes = Completion("notes", "stop", 1, 1, 0.0, "t")
    shaped = Completion(json.dumps(answer, ensure_ascii=False), "stop", 1, 1, 0.0, "t")
    return judge(EXPENSE, text, notes, shaped, meta=meta, reference_field=field)


def _date_evidence(verdict) -> dict:
    return next(e for e in verdict.evidence if e["path"] == "date")


TAXI = {"who": None, "date": "2025-03-03", "amount": 20, "currency": "EUR", "category": "transport",
        "project": None}  # fmt: skip


def test_the_date_header_of_a_real_eml_anchors_yesterday(tmp_path: Path) -> None:
    (tmp_path / "taxi.eml").write_bytes(
        b"From: Ren\xc3\xa9e <renee@example.org>\r\nTo: ap@example.com\r\nSubject: taxi\r\n"
        b"Date: Tue, 04 Mar 2025 09:12:00 +0100\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n\r\nTaxi yesterday, 20 EUR.\r\n"
    )
    (record,) = read_records(tmp_path)
    assert record.meta["reference_date"] == "2025-03-04"
    verdict = _judge(record.text, TAXI, record.meta)
    assert verdict.status == "ok", verdict.errors
    assert _date_evidence(verdict)["anchor"] == "meta reference_date"
    assert _judge(record.text, TAXI | {"date": "2025-03-02"}, record.meta).status != "ok"


def test_a_reference_date_column_of_a_sql_source_names_the_day(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'src.db'}"
    table = Table("notes", MetaData(), Column("id", Integer, primary_key=True), Column("text", Text),
                  Column("sent_on", Date))  # fmt: skip
    engine = create_engine(url)
    table.create(engine)
    with engine.begin() as connection:
        connection.execute(
            insert(table).values(id=1, text="Taxi yesterday, 20 EUR", sent_on=date(2025, 3, 4))
        )
    engine.dispose()
    (record,) = read_sql(url, table="notes")
    assert record.meta == {"sent_on": "2025-03-04"}
    verdict = _judge(record.text, TAXI, record.meta, field="sent_on")
    assert verdict.status == "ok" and _date_evidence(verdict)["anchor"] == "meta sent_on"
    assert _judge(record.text, TAXI, record.meta).status != "ok"  # the default field is not there


def test_a_jsonl_field_named_by_the_setting_is_the_reference(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "Taxi yesterday, 20 EUR", "written": "2025-03-04"}) + "\n")
    (record,) = read_records(path)
    assert _judge(record.text, TAXI, record.meta, field="written").status == "ok"
    assert _judge(record.text, TAXI | {"date": "2025-03-04"}, record.meta, field="written").status != "ok"


def test_a_date_the_text_states_anchors_only_a_record_without_one() -> None:
    text = "Sent on 2025-03-04: taxi yesterday, 20 EUR"
    verdict = _judge(text, TAXI)
    assert verdict.status == "ok"
    assert _date_evidence(verdict)["anchor"] == "text: Sent on 2025-03-04"
    # the record's own reference wins over the text's
    assert _judge(text, TAXI, {"reference_date": "2025-03-10"}).status != "ok"
    assert _judge(text, TAXI | {"date": "2025-03-09"}, {"reference_date": "2025-03-10"}).status == "ok"


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("Today is Friday 2024-03-22. Last Monday I paid 20 EUR", "2024-03-18"),
        ("Hoy es 2024-05-10. Ayer taxi 20 EUR", "2024-05-09"),
        ("今天是2024年6月3日，昨天打车20元", "2024-06-02"),
        ("> Date: Mon, 10 Jun 2024 09:00:00 +0200\n> taxi yesterday 20 EUR", "2024-06-09"),
    ],
)
def test_stated_anchors_in_several_languages(text, day) -> None:
    source = Source(text)
    assert source.values.date(day) is not None
    assert source.values.date(day).anchor.startswith("text: ")  # type: ignore[union-attr]
    assert Source("taxi yesterday 20 EUR, the due date 2024-07-01").values.date("2024-06-30") is None


# --- a base form the schema asks for meets the text's inflected form --------------------------------


@pytest.mark.parametrize(
    ("text", "value", "written"),
    [("Buy 6 eggs and bread", "egg", "eggs"), ("Bitte 10 Eier kaufen", "Ei", "Eier"),
     ("dos pares de calcetines", "calcetín", "calcetines"), ("2 Zwiebeln", "Zwiebel", "Zwiebeln")],
)  # fmt: skip
def test_a_base_form_is_backed_by_its_inflection(text, value, written) -> None:
    kind, spans, _ = Source(text).quote(value, base_form=True)
    assert kind == "normalised" and text[spans[0][0] : spans[0][1]] == written
    assert Source(text).quote(value)[0] == "none"  # only where the schema asks for the base form


@pytest.mark.parametrize(("text", "value"), [("Buy 6 eggs", "egg roll"), ("Bitte 10 Eier", "Eis")])
def test_another_word_is_no_inflection(text, value) -> None:
    assert Source(text).quote(value, base_form=True)[0] == "none"


@pytest.mark.parametrize("name", ["expense", "contact"])
def test_the_chinese_and_japanese_gold_sets_load_and_hold_both_languages(name) -> None:
    from formwork.tasks.evaluation.gold import load_gold

    records = load_gold(
        Path(__file__).parent.parent / "examples" / "gold" / f"{name}_zh_ja.jsonl", load_schema(name)
    )
    assert len(records) >= 15
    assert {r.meta["lang"] for r in records} == {"zh", "ja"}
