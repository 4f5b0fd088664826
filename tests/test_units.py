"""The units of a list, found from the text's layout alone: one per item, the header text around them.

Checked on the long gold documents (every gold item stands in a unit of its own, every header value
in the header text), on the irregular ways lists are written (wrapped lines, currency notes, a page
break that repeats the header, a pending section, a quantity line under its product, a quoted mail),
and, for any mix of lines, on the invariants: units in order, apart, inside the text, and with the
header text they hold every line of it.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.schemas.registry import load_checked_body, load_schema
from formwork.schemas.walk import walk
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.long.itemwise import unit_schema
from formwork.tasks.long.read import MIN_UNITS, UNITS_PER_PART, units_to_read
from formwork.tasks.long.units import Excerpt, find_units

LONG_GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold" / "long"
DOCUMENTS = [
    (path.stem.split("-")[0], json.loads(line))
    for path in sorted(LONG_GOLD.glob("*.jsonl"))
    if not path.stem.endswith("-held-out")
    for line in path.read_text(encoding="utf-8").splitlines()
]
# units that hold no item: a payment, a refund and three pending lines; a salary and a refund (H); a
# folio's payment; a quoted mail; a second mail
NOT_ITEMS = {"long-statement-uk": 5, "long-statement-konto": 2, "long-receipt-folio": 1, "long-thread-en": 1,
             "long-thread-ja": 1, "long-thread-irregular": 2}  # fmt: skip


@pytest.mark.parametrize(("schema", "row"), DOCUMENTS, ids=[row["id"] for _, row in DOCUMENTS])
def test_each_gold_item_stands_in_a_unit_of_its_own_and_the_header_around_them(
    schema: str, row: dict
) -> None:
    text, gold = row["text"], row["gold"]
    layout = find_units(text)
    name = next(k for k, v in gold.items() if isinstance(v, list))
    items = gold[name]
    assert len(layout.units) == len(items) + NOT_ITEMS.get(row["id"], 0)
    shown = [unit.text(text) for unit in layout.units]
    if "description" in items[0]:  # each line's item in a unit of its own, in the text's order
        at = 0
        for item in items:
            at = next(i for i in range(at, len(shown)) if item["description"] in shown[i]) + 1
    else:  # each person in the From line of a unit
        firsts = [unit.split("\n")[0] for unit in shown]
        assert all(any(f.startswith("From: ") and item["email"] in f for f in firsts) for item in items)
    header = layout.header.text(text)
    properties = load_schema(LONG_GOLD / f"{schema}.schema.json").properties
    quoted = [
        k for k, node in properties.items() if k != name and "enum" not in node and "format" not in node
    ]
    for field in quoted:
        if isinstance(gold.get(field), str):
            assert gold[field] in header, field


def _layout(text: str) -> list[tuple[str, str]]:
    return [(unit.text(text), unit.context) for unit in find_units(text).units]


def test_a_statement_line_keeps_its_wrapped_and_currency_lines_and_its_section() -> None:
    text = (
        "Card holder: ANA LIMA\n\nPAYMENTS\n02 May  PAYMENT THANK YOU   -500.00\n\nPURCHASES\n"
        "03 May  HOTEL ZUERICH          212.48\n        ZURICH CHE\n        CHF 234.00 @ 1.1013\n"
        "04 May  TESCO STORES 2041       34.17\n\n                     Page 1 of 2\n\f\n"
        "BANK plc   Card statement   ANA LIMA   Page 2 of 2\nDate  Description  Amount\n"
        "05 May  PRET A MANGER            9.45\nTotal purchases         256.10\n\n"
        "PENDING (not yet posted)\n06 May  UBER *TRIP               11.72\n"
    )
    assert _layout(text) == [
        ("02 May  PAYMENT THANK YOU   -500.00", "PAYMENTS"),
        (
            "03 May  HOTEL ZUERICH          212.48\n        ZURICH CHE\n        CHF 234.00 @ 1.1013",
            "PURCHASES",
        ),
        ("04 May  TESCO STORES 2041       34.17", "PURCHASES"),
        ("05 May  PRET A MANGER            9.45", "Date  Description  Amount"),
        ("06 May  UBER *TRIP               11.72", "PENDING (not yet posted)"),
    ]
    header = find_units(text).header.text(text)
    assert "Total purchases         256.10" in header and "Page 2 of 2" in header and "UBER" not in header


def test_a_receipt_line_keeps_its_quantity_line_and_ends_at_the_total() -> None:
    text = (
        "SHOP\n12 High St\nBANANAS LOOSE\n  0.915 kg @ £0.73/kg   £0.67\nCHEDDAR 350G          £5.50\n"
        "  2 @ £2.75\nRICE 1KG              £l.85\n牛乳　１０００ｍｌ　　¥４７６※\n　２コ×単２３８\n"
        "  4 BALANCE DUE        £8.02\nVISA DEBIT            £8.02\nCHANGE                £0.00"
    )
    assert [shown for shown, _ in _layout(text)] == [
        "BANANAS LOOSE\n  0.915 kg @ £0.73/kg   £0.67",
        "CHEDDAR 350G          £5.50\n  2 @ £2.75",
        "RICE 1KG              £l.85",  # OCR's l for 1 still reads as an amount
        "牛乳　１０００ｍｌ　　¥４７６※\n　２コ×単２３８",
    ]
    tender = "BALANCE DUE        £8.02\nVISA DEBIT            £8.02\nCHANGE                £0.00"
    assert find_units(text).header.text(text).endswith(tender)


def test_a_table_gives_its_rows_with_the_header_row_and_a_thread_its_messages_quoted_ones_too() -> None:
    rows = ["| Item | Qty | Amount |", "|---|---|---|", "| Nails | 2 | 3.40 |", "| Item | Qty | Amount |"]
    table = "\n".join(["Shop", *rows, "| Glue | 1 | 2.10 |", "| Total | | 5.50 |"])
    assert _layout(table) == [
        ("| Nails | 2 | 3.40 |", "| Item | Qty | Amount |\n|---|---|---|"),
        ("| Glue | 1 | 2.10 |", "| Item | Qty | Amount |\n|---|---|---|"),
    ]
    thread = (
        "From: Ana <ana@x.org>\nTo: Bo <bo@y.org>\nCc: team@x.org\n\nFine.\n\nAna\n\n"
        "From: Bo <bo@y.org>\n\nOk?\n\nOn Mon, 3 Jun 2024, Ana <ana@x.org> wrote:\n> Thursday?\n> Ana"
    )
    assert [shown.split("\n")[0] for shown, _ in _layout(thread)] == [
        "From: Ana <ana@x.org>", "From: Bo <bo@y.org>", "On Mon, 3 Jun 2024, Ana <ana@x.org> wrote:"
    ]  # fmt: skip


LINES = st.sampled_from(
    ["", "SHOP", "12 High St", "MILK 2L   £1.15", "  2 @ £0.60", "BANANAS", "  0.5 kg @ £1.00/kg  £0.50",
     "03 May  TESCO   12.40", "        LONDON GBR", "TOTAL   £9.99", "PENDING", "| a | 1 | 2.00 |",
     "From: A <a@b.c>", "> From: C <c@d.e>", "Regards,", "合　計　¥５，２４３"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(LINES, max_size=40))
def test_units_are_ordered_apart_and_with_the_header_text_hold_every_line(lines: list[str]) -> None:
    text = "\n".join(lines)
    layout = find_units(text)
    covered = [(unit.start, unit.end) for unit in layout.units]
    assert all(0 <= a < b <= len(text) for a, b in covered)
    assert all(b1 < a2 for (_, b1), (a2, _) in itertools.pairwise(covered)), "in order, apart"
    header = layout.header
    assert all(header.text(text)[i] == text[header.to_whole(i)] for i in range(len(header.text(text))))
    kept = {i for a, b in covered for i in range(a, b)}
    kept |= {header.to_whole(i) for i in range(len(header.text(text)))}
    assert all(i in kept or text[i] == "\n" for i in range(len(text))), "every character but a newline"


def test_an_excerpt_maps_its_characters_to_the_whole_text() -> None:
    text = "top line\nitem one\nbottom line"
    excerpt = Excerpt(((0, 9), (18, len(text))))
    assert excerpt.text(text) == "top line\nbottom line"
    assert [text[excerpt.to_whole(i)] for i in range(len(excerpt.text(text)))] == list(excerpt.text(text))


def _schema(**items: Any) -> Any:
    body = json.loads((LONG_GOLD / "statement.schema.json").read_text(encoding="utf-8"))
    body["properties"]["expenses"].update(items)
    return load_checked_body(body, "statement-test")


def test_the_rule_reads_a_long_list_item_by_item_and_a_short_one_or_prose_otherwise() -> None:
    line = "2024-05-{:02d}  Cafe  {}.50 EUR"
    long = "\n".join(line.format(d, d) for d in range(1, MIN_UNITS + 2))
    short = "\n".join(line.format(d, d) for d in range(1, MIN_UNITS - 2))
    options = ExtractOptions()
    statement = _schema()
    assert units_to_read(long, statement, options) is not None
    assert units_to_read(short, statement, options) is None, "a short list is read whole"
    assert units_to_read(short, _schema(**{"x-units": "lines"}), options) is not None, "unless it says so"
    assert units_to_read(long, _schema(**{"x-units": "none"}), options) is None
    assert units_to_read(long, statement, ExtractOptions(split_long_texts=False)) is None
    shopping = load_schema("shopping_list")  # its items are named in a sentence
    assert units_to_read("Get 2 apples, milk and 3 lemons from Tesco", shopping, options) is None
    prose = " ".join(f"On May {d} I paid {d}.50 EUR for a cafe." for d in range(1, 20))  # one line
    assert units_to_read(prose, statement, options) is None


def test_a_list_of_ten_thousand_lines_is_read_in_a_bounded_number_of_units_and_cut() -> None:
    huge = "\n".join(f"2024-05-{d % 28 + 1:02d}  Cafe table {d}  {d % 97 + 3}.50 EUR" for d in range(10_000))
    options = ExtractOptions()
    layout = units_to_read(huge, _schema(), options)
    assert layout is not None and len(layout.units) == options.max_parts * UNITS_PER_PART
    assert layout.cut_to == layout.units[-1].end < len(huge)


def test_a_short_statement_is_read_by_its_dated_lines_after_a_summary_of_amounts() -> None:
    text = (
        "Payments and credits   - 1,273.99\nNew purchases   41.97\nMinimum payment due 25 June   48.73\n\n"
        "06 May   TESCO STORES 2041     34.17\n07 May   TFL TRAVEL             7.80\n"
    )
    assert [shown for shown, _ in _layout(text)] == [
        "06 May   TESCO STORES 2041     34.17", "07 May   TFL TRAVEL             7.80"
    ]  # fmt: skip


TEXTS = {row["id"]: row["text"] for _, row in DOCUMENTS}


def _credits(text: str) -> list[str]:
    return [unit.text(text).split("\n")[0] for unit in find_units(text).units if unit.credit]


def test_balances_are_header_text_and_money_in_is_marked_as_each_bank_writes_it() -> None:
    """A Sparkasse statement: `02.05.` lines, balances carried across a page, credits marked `H`; a UK
    card statement: a "PAYMENTS AND CREDITS" section; a folio: a Credits column."""
    konto = TEXTS["long-statement-konto"]
    layout = find_units(konto)
    assert len(layout.units) == 19, "17 expenses and 2 credits, each on its dated line"
    assert all(
        word in layout.header.text(konto) for word in ("alter Kontostand", "Übertrag auf", "Summe Soll")
    )
    assert [line.split()[2] for line in _credits(konto)] == ["Gutschrift", "Gutschrift"]
    uk = TEXTS["long-statement-uk"]
    assert [line.split()[2] for line in _credits(uk)] == ["PAYMENT", "REFUND"]
    folio = TEXTS["long-receipt-folio"]
    assert [line.split()[1] for line in _credits(folio)] == ["Payment"]
    charged = [unit.text(folio) for unit in find_units(folio).units]
    assert sum("City tax" in line for line in charged) == 4, "a dated tax line is a charge of its own"
    table = (
        "| Date | Description | Debit | Credit |\n|---|---|---|---|\n| 2024-05-02 | REWE | 45.90 | |\n"
        "| 2024-05-06 | Salary | | 3,412.55 |\n| 2024-05-07 | Telekom | 39.95 | |\n"
    )
    assert _credits(table) == ["| 2024-05-06 | Salary | | 3,412.55 |"]
    marked = "01/05 COFFEE 3.20\n02/05 REFUND SHOP 12.00 CR\n03/05 TRAIN 8.40\n"
    assert _credits(marked) == ["02/05 REFUND SHOP 12.00 CR"]


def _date_candidates(body: dict[str, Any]) -> set[str]:
    return {
        value for pointer, node in walk(body)
        if pointer.endswith("/date") for value in node.get("enum", []) if value is not None
    }  # fmt: skip


def test_a_statement_line_is_dated_by_its_own_dated_line_not_by_a_timestamp_under_it() -> None:
    """The Sparkasse card payment booked `02.05.` writes its card's `2024-05-01T18:22` two lines
    under: the row's date is its column's, so the unit's date candidates are its first line's."""
    konto = TEXTS["long-statement-konto"]
    layout = find_units(konto)
    card = next(unit for unit in layout.units if "T18:22" in unit.text(konto))
    shown = card.text(konto)
    assert card.dates_in == (0, shown.index("\n"))
    reading = unit_schema(_schema(), "lines")
    meta = layout.reading_meta(None, konto, "reference_date")
    options = ExtractOptions()
    anywhere = _date_candidates(options.formatting_grammar(reading, shown, meta))
    assert anywhere == {"2024-05-02", "2024-05-01"}
    assert _date_candidates(options.formatting_grammar(reading, shown, meta, dates_in=card.dates_in)) == {
        "2024-05-02"
    }
    receipt = find_units(TEXTS["long-receipt-en"])
    assert all(unit.dates_in is None for unit in receipt.units), "a receipt's lines are not dated"
    undated = "05/02  Coffee  3.20\n       paid 2024-05-01\n"
    assert _date_candidates(options.formatting_grammar(reading, undated, None, dates_in=(7, 13))) == {
        "2024-05-01"
    }, "where the span states no date, a date is read anywhere"
