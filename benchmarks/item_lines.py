"""How many lines that are no item the unit cutting makes into units on real receipts, and how many items
it loses: no model, the layout alone (tasks/long/units.py), against hand labels.

    .venv/bin/python benchmarks/item_lines.py [--show] [--unlabelled]

Each receipt of benchmarks/data/sroie_item_lines.json (ten real SROIE receipts, every line labelled by
hand as one item's or no item's; its `about` says how) is cut into units by `find_units`, the cutting
a long list read item by item uses. Per receipt:
- items: the labelled items;
- units: the units cut;
- non-item units: units none of whose lines is an item's (a total, a tax line, cash, change, rounding,
  a promotion line): each is read by the model as a unit and may come back as an extra item;
- items lost: items none of whose lines stands in a unit (read by no unit, so never extracted);
- bare units: units with no description, only numbers, amounts and codes ("15.90", "1 / 3.55 / SR"): a
  model reads a price there with no name, and the name's unit without its price; described, a unit has
  a word of four letters or more, or two words of letters on one line ("CN PEAR");
- merged units: units that hold lines of two items or more (each is read as one item: one is lost).
The last row gives the units per labelled item: 1.0 where each unit is one item's row. `--show` prints
each non-item, bare and merged unit's text. `--unlabelled` adds the units and bare units over every
receipt text of the file, labelled or not (no item counts there: no labels). Receipts held out
(examples/gold/real/sroie-held-out.txt) are refused by name before any text is read.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from formwork.tasks.long.units import find_units

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "benchmarks" / "data" / "sroie_item_lines.json"
TEXTS = ROOT / "examples" / "gold" / "real" / "shop_receipt_sroie.jsonl"
HELD_OUT = ROOT / "examples" / "gold" / "real" / "sroie-held-out.txt"
COUNTS = ("items", "units", "non_item_units", "items_lost", "bare_units", "merged_units")
LONG_WORD = re.compile(r"[A-Za-z]{4,}")
LETTER_WORD = re.compile(r"(?<![\w.])[A-Za-z]{2,}(?![\w.])")


def described(unit_text: str) -> bool:
    """Whether a unit names something: a word of four letters or more, or two words of letters on one
    line ("CN PEAR"); a tax code beside numbers ("SR", "ZRL", "15.56SR") names nothing."""
    return any(
        LONG_WORD.search(line) or len(LETTER_WORD.findall(line)) >= 2 for line in unit_text.split("\n")
    )


def held_out_ids() -> set[str]:
    """The held-out receipts as gold ids ("data/key/018.json" -> "sroie-018")."""
    lines = HELD_OUT.read_text(encoding="utf-8").splitlines()
    return {f"sroie-{Path(line.strip()).stem}" for line in lines if line.startswith("data/")}


def texts_of(ids: set[str]) -> dict[str, str]:
    """The text of each receipt in `ids`, none held out."""
    refused = ids & held_out_ids()
    if refused:
        raise SystemExit(f"labels name held-out receipts {sorted(refused)}: remove them from {LABELS.name}")
    texts = {}
    for line in TEXTS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] in ids:
            texts[row["id"]] = row["text"]
    return texts


def measure(text: str, items: list[list[int]]) -> dict[str, Any]:
    """The counts of one receipt; `items` are its [first, last] line ranges."""
    item_of = {n: i for i, (first, last) in enumerate(items) for n in range(first, last + 1)}
    units = find_units(text).units
    covered = [range(text.count("\n", 0, u.start), text.count("\n", 0, u.end) + 1) for u in units]
    non_items = [u for u, lines in zip(units, covered, strict=True) if not any(n in item_of for n in lines)]
    reached = {item_of[n] for lines in covered for n in lines if n in item_of}
    bare = [u for u in units if not described(u.text(text))]
    merged = [
        u
        for u, lines in zip(units, covered, strict=True)
        if len({item_of.get(n) for n in lines} - {None}) > 1
    ]
    return {
        "items": len(items),
        "units": len(units),
        "non_item_units": len(non_items),
        "items_lost": len(items) - len(reached),
        "bare_units": len(bare),
        "merged_units": len(merged),
        "shown": [
            f"{kind}: {u.text(text).replace(chr(10), ' / ')}"
            for kind, found in (("no item", non_items), ("bare", bare), ("merged", merged))
            for u in found
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--show", action="store_true", help="print the non-item, bare and merged units")
    parser.add_argument("--unlabelled", action="store_true", help="also count units over every receipt")
    args = parser.parse_args()
    receipts = json.loads(LABELS.read_text(encoding="utf-8"))["receipts"]
    texts = texts_of({r["id"] for r in receipts})
    print("| receipt | items | units | non-item units | items lost | bare units | merged units |")
    print("|---|---|---|---|---|---|---|")
    sums = dict.fromkeys(COUNTS, 0)
    for receipt in receipts:
        row = measure(texts[receipt["id"]], receipt["items"])
        counts = " | ".join(str(row[key]) for key in sums)
        print(f"| {receipt['id']} | {counts} |")
        for key in sums:
            sums[key] += row[key]
        for shown in row["shown"] if args.show else []:
            print(f"    {shown}")
    print(f"| all | {' | '.join(str(n) for n in sums.values())} |")
    print(f"units per labelled item: {sums['units'] / sums['items']:.2f}")
    if args.unlabelled:
        every = texts_of({json.loads(line)["id"] for line in TEXTS.read_text(encoding="utf-8").splitlines()})
        units = [(text, unit) for text in every.values() for unit in find_units(text).units]
        bare = sum(not described(unit.text(text)) for text, unit in units)
        print(f"every receipt ({len(every)}): {len(units)} units, {bare} bare")


if __name__ == "__main__":
    main()
