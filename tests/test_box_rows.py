"""A receipt OCR'd one box a line is read in item rows: each unit one item, its name with its price.

Before tasks/long/box_rows.py such a receipt was cut at each amount: on ten real SROIE receipts labelled
by hand (benchmarks/data/sroie_item_lines.json, measured by benchmarks/item_lines.py) 233 units for 100
items, 220 of them a price with no name, the names in no unit. The lists below copy the shapes of those
receipts (the description after the boxes, or before them with a wrapped line, or after an article
number printed under the row above); a receipt whose lines hold a name and a price keeps its lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formwork.tasks.long.box_rows import kind_of
from formwork.tasks.long.layout import Line
from formwork.tasks.long.units import find_units

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "benchmarks" / "data" / "sroie_item_lines.json"
SROIE = ROOT / "examples" / "gold" / "real" / "shop_receipt_sroie.jsonl"


def shown(lines: list[str]) -> list[str]:
    text = "\n".join(lines)
    return [unit.text(text) for unit in find_units(text).units]


@pytest.mark.parametrize(
    ("text", "kind"),
    [("9555067700208", "box"), ("105.66 *", "price"), ("53.40SR", "price"), ("1X", "box"), ("ZRL", "box"),
     ("FG-A00019", "box"), (".S", "box"), ("- IK YELLOW 70GRAMS", "text"), ("CUT FRUITS 1.99", "text"),
     ("CN PEAR", "text"), ("MTD RC AT K074 : 111.90", "field"), ("TYPE:", "field"), ("TOTAL", "break"),
     ("ITEM PROMO @12.99", "break"), ("", "break")],
)  # fmt: skip
def test_a_line_is_a_box_a_price_a_description_a_field_or_a_break(text: str, kind: str) -> None:
    assert kind_of(Line(0, len(text), text)) == kind


def test_a_till_that_prints_the_description_after_the_boxes_gives_one_unit_per_row() -> None:
    lines = ["TEO HENG STATIONERY", "ITEM", "QTY", "U/P", "AMOUNT", "(RM)",
             "9555067700208", "10", "10.57", "105.66 *", "- IK YELLOW 70GRAMS",
             "9557583450025", "1", "17.45", "17.45 *", "- PAPYRUS DARK COLOUR PAPER",
             "9556655112694", "1", "8.40", "8.40 *", "- CBE A4 SIZE 20 POCKETS REFILLABLE NEW",
             "CLEAR HOLDER",
             "TOTAL QTY. :", "12", "TOTAL", "131.51", "CASH", "140.00"]  # fmt: skip
    assert shown(lines) == [
        "9555067700208\n10\n10.57\n105.66 *\n- IK YELLOW 70GRAMS",
        "9557583450025\n1\n17.45\n17.45 *\n- PAPYRUS DARK COLOUR PAPER",
        "9556655112694\n1\n8.40\n8.40 *\n- CBE A4 SIZE 20 POCKETS REFILLABLE NEW\nCLEAR HOLDER",
    ]


def test_a_description_before_the_boxes_keeps_its_wrapped_line_and_a_field_after_is_no_row() -> None:
    lines = ["HON HWA HARDWARE", "QTY", "DESCRIPTION", "PRICE", "TOTAL(RM)",
             '2 1" TOWEL ROD', "6.00", "12.00 SR", "BRACKET(END)",
             "1 SANDFLEX SAW", "4.50", "4.50 SR", "BLADE 18T",
             "1 SCREW", "7.00", "7.00 SR", "ITEM DISCOUNT", "0.00",
             '17 3/4" ALUMINIUM ROD', "5.80", "98.60 SR", "TYPE:", "10",
             "TOTAL", "122.10", "CASH", "130.00"]  # fmt: skip
    assert shown(lines) == [
        '2 1" TOWEL ROD\n6.00\n12.00 SR\nBRACKET(END)',
        "1 SANDFLEX SAW\n4.50\n4.50 SR\nBLADE 18T",
        "1 SCREW\n7.00\n7.00 SR",
        '17 3/4" ALUMINIUM ROD\n5.80\n98.60 SR',
    ]


def test_an_article_number_printed_after_a_row_opens_the_next_row() -> None:
    lines = ["TAXCODE", "(RM)", "011100029", "KCL SOH HOON 5KG", "1 CTN", "31.50", "31.50 SR",
             "070100004", "BAWANG PUTIH", "1 KG", "37.50", "37.50 ZRL",
             "TOTAL INC. GST", "6%:", "69.00", "CASH", "70.00"]  # fmt: skip
    assert shown(lines) == [
        "KCL SOH HOON 5KG\n1 CTN\n31.50\n31.50 SR",
        "070100004\nBAWANG PUTIH\n1 KG\n37.50\n37.50 ZRL",
    ]


def test_a_receipt_whose_lines_hold_a_name_and_a_price_keeps_its_lines() -> None:
    lines = ["CORNER SHOP", "Milk 1.15", "Bread 2.30", "Eggs 3.10", "Apples 2.40", "0.50", "TOTAL 9.45"]
    assert shown(lines) == ["Milk 1.15", "Bread 2.30", "Eggs 3.10", "Apples 2.40", "0.50"]


def test_on_ten_real_receipts_each_unit_is_one_labelled_item_with_its_name() -> None:
    texts = {
        row["id"]: row["text"] for row in map(json.loads, SROIE.read_text(encoding="utf-8").splitlines())
    }
    units = items = bare = merged = 0
    for receipt in json.loads(LABELS.read_text(encoding="utf-8"))["receipts"]:
        text = texts[receipt["id"]]
        item_of = {n: i for i, (a, b) in enumerate(receipt["items"]) for n in range(a, b + 1)}
        for unit in find_units(text).units:
            lines = range(text.count("\n", 0, unit.start), text.count("\n", 0, unit.end) + 1)
            merged += len({item_of.get(n) for n in lines} - {None}) > 1
            bare += all(kind_of(Line(0, 0, row)) != "text" for row in unit.text(text).split("\n"))
            units += 1
        items += len(receipt["items"])
    assert (units, items) == (100, 100)  # were 233 units for 100 items
    assert bare == 0  # were 220 units with no name
    assert merged == 0


def test_a_quantity_before_the_next_description_opens_its_row_and_a_unit_price_ends_the_row_above() -> None:
    lines = ["QTY", "DESCRIPTION", "TOTAL(RM)", "1", "BC001 CLAYPOT F/TOFU", "18.90",
             "2", "T002S SPICY THAI TOM", "50.00", "AFOOD (S)", "@RM25.00",
             "1", "V001 FRIED KANGKUNG", "16.90", "TOTAL", "85.80", "CASH", "100.00"]  # fmt: skip
    assert shown(lines) == [
        "BC001 CLAYPOT F/TOFU\n18.90",
        "2\nT002S SPICY THAI TOM\n50.00\nAFOOD (S)\n@RM25.00",
        "1\nV001 FRIED KANGKUNG\n16.90",
    ]


def test_rows_whose_descriptions_stand_elsewhere_are_cut_where_an_article_number_comes_again() -> None:
    lines = ["OPEN CODE-SR ITEM", "0025679 U", "3X8.00", "24.00 S", "0020329 PKT", "1X7.00", "7.00 S",
             "SUBTOTAL INCL GST", "31.00", "CASH", "50.00"]  # fmt: skip
    assert shown(lines) == ["OPEN CODE-SR ITEM\n0025679 U\n3X8.00\n24.00 S", "0020329 PKT\n1X7.00\n7.00 S"]


def test_a_list_that_opens_with_a_counted_description_pairs_each_price_with_the_name_above_it() -> None:
    # it ends with a description line (an extra under the last item), yet each name stands before its price
    lines = ["QTY DESC AMT", "1 SABA SHIOYAKI WAZEN (20MINS)", "26.00 S", "1 UNAGI DON", "28.00 S",
             "1 JASMINE GREEN TEA", "10.00 S", "* EXTRA 1 TEA CUP", "SUBTOTAL:", "64.00", "CASH:",
             "64.00"]  # fmt: skip
    assert shown(lines) == [
        "1 SABA SHIOYAKI WAZEN (20MINS)\n26.00 S",
        "1 UNAGI DON\n28.00 S",
        "1 JASMINE GREEN TEA\n10.00 S\n* EXTRA 1 TEA CUP",
    ]


def test_a_wrapped_description_stays_with_its_row_where_the_next_opens_with_its_code() -> None:
    lines = ["DESCRIPTION", "QTY", "AMOUNT", "(T02) BRAISED PORK", "2.0", "7.00", "14.00", "RICE",
             "(V02) SOUR & SPICY", "1.0", "12.00", "12.00", "MUSTARD", "TOTAL QTY:", "3",
             "26.00"]  # fmt: skip
    assert shown(lines) == [
        "(T02) BRAISED PORK\n2.0\n7.00\n14.00\nRICE",
        "(V02) SOUR & SPICY\n1.0\n12.00\n12.00\nMUSTARD",
    ]
