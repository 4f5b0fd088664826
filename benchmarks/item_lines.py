"""How many lines that are no item the unit cutting makes into units on real receipts, and how many items
it loses: no model, the layout alone (tasks/long/units.py), against hand labels.

    .venv/bin/python benchmarks/item_lines.py [--show]

Each receipt of benchmarks/data/sroie_item_lines.json (ten real SROIE receipts, every line labelled by
hand as one item's or no item's; its `about` says how) is cut into units by `find_units`, the cutting
a long list read item by item uses. Per receipt:
- items: the labelled items;
- units: the units cut;
- non-item units: units none of whose lines is an item's (a total, a tax line, cash, change, rounding,
  a promotion line): each is read by the model as a unit and may come back as an extra item;
- items lost: items none of whose lines stands in a unit (read by no unit, so never extracted).
`--show` prints each non-item unit's text. Receipts held out (examples/gold/real/sroie-held-out.txt)
are refused by name before any text is read.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from formwork.tasks.long.units import find_units

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "benchmarks" / "data" / "sroie_item_lines.json"
TEXTS = ROOT / "examples" / "gold" / "real" / "shop_receipt_sroie.jsonl"
HELD_OUT = ROOT / "examples" / "gold" / "real" / "sroie-held-out.txt"


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
    return {
        "items": len(items),
        "units": len(units),
        "non_item_units": len(non_items),
        "items_lost": len(items) - len(reached),
        "shown": [u.text(text).replace("\n", " / ") for u in non_items],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--show", action="store_true", help="print each non-item unit's text")
    args = parser.parse_args()
    receipts = json.loads(LABELS.read_text(encoding="utf-8"))["receipts"]
    texts = texts_of({r["id"] for r in receipts})
    print("| receipt | items | units | non-item units | items lost |")
    print("|---|---|---|---|---|")
    sums = dict.fromkeys(("items", "units", "non_item_units", "items_lost"), 0)
    for receipt in receipts:
        row = measure(texts[receipt["id"]], receipt["items"])
        counts = " | ".join(str(row[key]) for key in sums)
        print(f"| {receipt['id']} | {counts} |")
        for key in sums:
            sums[key] += row[key]
        for shown in row["shown"] if args.show else []:
            print(f"    {shown}")
    print(f"| all | {' | '.join(str(n) for n in sums.values())} |")


if __name__ == "__main__":
    main()
