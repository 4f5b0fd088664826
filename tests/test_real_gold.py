"""The gold made from real records (examples/gold/real, by benchmarks/make_real_gold.py) is usable as it
stands: each file loads through the gold loader against its schema as a calibrating gold (every field
named), every non-null value is one the project's judge keeps when a perfect model writes it (a label
mapped to the wrong span, or a date read month first, would score a right answer as wrong), and no
receipt held out in ../shared/heldout-ids.txt is in it (compared by name only: that file's records are
never read here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.evaluation.gold import load_gold
from formwork.tasks.validate import judge

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "examples" / "gold" / "real"
HELDOUT = ROOT.parent / "shared" / "heldout-ids.txt"
FILES = {
    "contact_textmine_jdr.jsonl": "contact",
    "contact_textmine_jdf.jsonl": "contact",
    "shop_receipt_sroie.jsonl": "shop_receipt",
}


def _kept(schema, text: str, gold: dict) -> dict:
    """What the judge keeps of `gold` written as a perfect model's answer (log-probability 0)."""
    written = json.dumps({key: gold.get(key) for key in schema.properties}, ensure_ascii=False)
    notes = Completion("notes", "stop", 1, 1, 0.0, "perfect")
    answer = Completion(written, "stop", 1, 1, 0.0, "perfect", ((written, 0.0),))
    return judge(schema, text, notes, answer).data or {}


@pytest.mark.parametrize(("name", "schema_name"), sorted(FILES.items()))
def test_every_gold_value_is_kept_by_the_judge_in_its_text(name: str, schema_name: str) -> None:
    schema = load_schema(schema_name)
    records = load_gold(REAL / name, schema, complete=True)
    assert len(records) >= 400
    lost = []
    for record in records:
        kept = _kept(schema, record.text, record.gold)
        lost += [(record.id, k, v) for k, v in record.gold.items() if v is not None and kept.get(k) != v]
    assert lost == []


def _held_receipts(path: Path) -> set[str]:
    return set(re.findall(r"^data/key/(\d+)\.json$", path.read_text(encoding="utf-8"), re.M))


def test_no_held_out_receipt_is_in_the_gold() -> None:
    """Checked against the list committed beside the gold (a clean clone has no ../shared), and that
    list against ../shared/heldout-ids.txt wherever that file is."""
    held = _held_receipts(REAL / "sroie-held-out.txt")
    assert len(held) == 100  # the list is read: an empty set would pass anything
    if HELDOUT.exists():
        assert held == _held_receipts(HELDOUT)
    ids = [json.loads(line)["id"] for line in (REAL / "shop_receipt_sroie.jsonl").read_text().splitlines()]
    assert {i.removeprefix("sroie-") for i in ids} & held == set()
    assert all(re.fullmatch(r"sroie-\d{3}", i) for i in ids)


def test_no_textmine_record_is_from_the_held_out_jda() -> None:
    for name in ("contact_textmine_jdr.jsonl", "contact_textmine_jdf.jsonl"):
        rows = [json.loads(line) for line in (REAL / name).read_text().splitlines()]
        assert {row["meta"]["source"].split()[-1] for row in rows} == {
            name.split("_")[-1].split(".")[0].upper() + ".json"
        }
