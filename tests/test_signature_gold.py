"""The email_signature gold (examples/gold/real/signature_textmine_jdr.jsonl, made by
benchmarks/make_real_gold.py from TextMine's JDR.json) measures what a user's own audited rows certify on
a schema Formwork has never seen, so it must hold as it stands: the schema is a user's file, not a
built-in; every record loads as calibrating gold (every field named); every non-null value is one the
judge keeps when a perfect model writes it (else a right answer would score as wrong); and a record
shared with contact_textmine_jdr.jsonl is the same signature under the same id with the same values
for the fields both schemas hold, so the two files' measures speak of the same records. No model."""

from __future__ import annotations

import json
from pathlib import Path

from formwork.schemas.registry import builtin_names, load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.evaluation.gold import load_gold
from formwork.tasks.validate import judge

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "examples" / "schemas" / "email_signature.schema.json"
GOLD = ROOT / "examples" / "gold" / "real" / "signature_textmine_jdr.jsonl"
CONTACT = ROOT / "examples" / "gold" / "real" / "contact_textmine_jdr.jsonl"
SHARED = {"full_name": "name", "email": "email", "organization": "organization", "phone": "phone"}


def _rows(path: Path) -> dict[str, dict]:
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    return {row["id"]: row for row in rows}


def test_the_schema_is_a_users_file_with_six_fields() -> None:
    schema = load_schema(SCHEMA)
    assert schema.name == "email_signature" and "email_signature" not in builtin_names()
    assert list(schema.properties) == ["full_name", "job_title", "organization", "email", "phone", "website"]


def test_every_gold_value_is_kept_by_the_judge_in_its_text() -> None:
    schema = load_schema(SCHEMA)
    records = load_gold(GOLD, schema, complete=True)
    assert len(records) >= 460
    notes = Completion("notes", "stop", 1, 1, 0.0, "perfect")
    lost = []
    for record in records:
        written = json.dumps({key: record.gold.get(key) for key in schema.properties}, ensure_ascii=False)
        answer = Completion(written, "stop", 1, 1, 0.0, "perfect", ((written, 0.0),))
        kept = judge(schema, record.text, notes, answer).data or {}
        lost += [(record.id, k, v) for k, v in record.gold.items() if v is not None and kept.get(k) != v]
    assert lost == []


def test_a_signature_shared_with_the_contact_gold_has_its_id_text_and_values() -> None:
    signature, contact = _rows(GOLD), _rows(CONTACT)
    shared = signature.keys() & contact.keys()
    assert len(shared) >= 450
    differ = [
        (key, field)
        for key in shared
        for field, theirs in SHARED.items()
        if signature[key]["text"] != contact[key]["text"]
        or signature[key]["gold"][field] != contact[key]["gold"][theirs]
    ]
    assert differ == []
    assert {row["meta"]["source"] for row in signature.values()} == {
        "Emvista/Challenge_TextMine_2023 JDR.json"
    }
