"""Issue 52 point 5: a value that identifies something is compared exactly, in scoring, calibration
and audits. tim@acme.com is not tom@acme.com however close the strings; phones compare their digits;
URLs their scheme and host in any case; account and order numbers without spaces, dashes and dots.
Free text (names, descriptions) keeps its fuzzy comparison, and every gold set scores 100% as its own
answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from formwork.schemas.registry import load_schema, schema_from_body
from formwork.tasks.evaluation.audit import unsettled
from formwork.tasks.evaluation.calibration import GoldRow, examples
from formwork.tasks.evaluation.certified import field_counts
from formwork.tasks.evaluation.scoring import compare, rule_for, score_record

GOLD = Path(__file__).parent.parent / "examples" / "gold"
CONTACT = load_schema("contact")
LONG = {"type": ["string", "null"], "maxLength": 200}  # a long string: fuzzy unless it identifies


def test_tom_is_not_tim_in_the_contact_schema() -> None:
    """The built-in e-mail (maxLength 120) was compared fuzzily: ratio 92 counted tim@ right for tom@."""
    email = CONTACT.properties["email"]
    assert compare(email, "tom@acme.com", "tim@acme.com", "email") is False
    assert compare(email, "tom@acme.com", "Tom@ACME.com ", "email") is True  # case and spaces only
    assert compare(email, "tom@acme.com", "mailto:tom@acme.com", "email") is True
    gold = {"name": "Tom Li", "email": "tom@acme.com", "phone": None, "organization": "Acme"}
    scored = score_record(CONTACT, "r1", gold, "ok", {**gold, "email": "tim@acme.com"})
    assert scored.fields["email"] is False and scored.outcome == "content_wrong"


@pytest.mark.parametrize(
    ("got", "same"),
    [
        ("+44 20 7946 0958", True),
        ("+44-20-7946-0958", True),
        ("+44.20.7946.0958", True),
        ("0044 20 7946 0958", True),  # 00 is the international prefix written out
        ("+44 (0)20 7946 0958", True),  # the trunk 0 in brackets is not dialled from abroad
        ("+44 20 7946 0959", False),  # one digit off: another number
        ("+44 20 7946 095", False),
        ("n/a", False),  # no digits at all: no number, never the gold's
        ("020 7946 0958", False),  # the national form: another string of digits, not what was written
        ("no phone", False),
    ],
)
def test_phones_compare_their_digits(got: str, same: bool) -> None:
    assert compare(CONTACT.properties["phone"], "+44 20 7946 0958", got, "phone") is same
    assert compare({"type": "string"}, "+44 20 7946 0958", got, "mobile_phone") is same  # by name alone


@pytest.mark.parametrize(
    ("name", "gold", "got", "same"),
    [
        ("website", "https://Acme.com/Team", "https://acme.COM/Team", True),  # scheme and host: any case
        ("website", "https://acme.com/Team", "https://acme.com/team", False),  # the path is exact
        ("website", "https://acme.com/", "https://acme.com", True),
        ("website", "https://acme.com/team", "https://acme.co/team", False),
        ("order_number", "AB-1234.56 7", "ab12345 67", True),
        ("order_number", "AB-1234567", "AB-1234568", False),
        ("orderId", "A1000234", "A1000243", False),
        ("iban", "DE89 3704 0044 0532 0130 00", "DE89370400440532013000", True),
        ("iban", "DE89 3704 0044 0532 0130 00", "DE89 3704 0044 0532 0131 00", False),
        ("account", "12-3456-789", "12 3456 789", True),
        ("sku", "SKU-0042-B", "SKU-0042-8", False),
    ],
)
def test_urls_and_reference_numbers_compare_exactly(name: str, gold: str, got: str, same: bool) -> None:
    assert compare(LONG, gold, got, name) is same


def test_free_text_stays_fuzzy_and_a_name_or_pattern_decides_the_rule() -> None:
    described = "Lunch with the whole design team at the pier"
    assert compare(LONG, described, "Lunch with the design team at the pier", "description") is True
    assert compare(LONG, described, "Lunch with the design team at the pier", "order_notes") is True
    names = ("email_address", "contactEmail", "e_mail", "email_subject", "phone_number", "homePhone",
             "phonetic_name", "web_site", "order_id", "account_holder", "name",
             "contacts[0].phone")  # fmt: skip
    rules = {name: rule_for(LONG, name) for name in names}
    assert rules == {
        "email_address": "email", "contactEmail": "email", "e_mail": "email", "email_subject": "fuzzy",
        "phone_number": "digits", "homePhone": "digits", "phonetic_name": "fuzzy", "web_site": "url",
        "order_id": "code", "account_holder": "fuzzy", "name": "fuzzy", "contacts[0].phone": "digits",
    }  # fmt: skip
    assert rule_for({"type": "string", "format": "uri"}) == "url"
    assert rule_for({"type": "string", "pattern": r"^\d{4}-\d{4}$"}, "member") == "digits"
    assert rule_for({"type": "string", "pattern": r"^[A-Z]{2}\d+$", "maxLength": 20}, "member") == "text"
    assert rule_for({"type": "string", "x-match": "fuzzy"}, "email") == "fuzzy"  # x-match overrides


def test_an_identifier_inside_a_list_of_objects_is_exact() -> None:
    schema = schema_from_body({
        "type": "object",
        "properties": {"people": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 80}, "email": {"type": "string", "maxLength": 200}}}}},
    }, "<people>")  # fmt: skip
    gold = {"people": [{"name": "Tom Li", "email": "tom@acme.com"}]}
    assert score_record(schema, "r", gold, "ok", gold).fields["people"] is True
    wrong = {"people": [{"name": "Tom Li", "email": "tim@acme.com"}]}
    assert score_record(schema, "r", gold, "ok", wrong).fields["people"] is False


def _trust(path: str, value: Any) -> dict[str, Any]:
    reading = {"value": value, "p": 0.99, "verdict": "passed", "kind": "exact", "written": True,
               "rival": None}  # fmt: skip
    return {"path": path, "field": path, "certified": True, "reading": "one-pass",
            "readings": {"one-pass": reading}, "offered": 1, "competes": False}  # fmt: skip


def test_calibration_and_audit_count_tim_wrong_for_tom() -> None:
    """What a calibration learns from and an audit checks: tim@ read for tom@ is a wrong value."""
    gold = {"name": "Tom Li", "email": "tom@acme.com", "phone": "+1 555 0100", "organization": "Acme"}
    read = {**gold, "email": "tim@acme.com", "phone": "+1-555-0100"}
    row = GoldRow("r1", [_trust(path, value) for path, value in read.items()], gold)
    counts = field_counts(CONTACT, [row])
    assert (counts["email"].certified, counts["email"].right) == (1, 0)
    assert (counts["phone"].certified, counts["phone"].right) == (1, 1)
    _, right, _ = examples(CONTACT, [row])
    assert right == [True, False, True, True]
    # a person marked the e-mail wrong and gave tom@: a correction, not an answer the rules call right
    marks = {"email": "wrong", "name": "right"}
    assert unsettled(CONTACT, read, row.trust, gold, marks) == []


def _gold_sets() -> list[tuple[str, Path]]:
    sets = [(path.stem, path) for path in sorted(GOLD.glob("*.jsonl"))]
    long = [(p.stem, p) for p in sorted((GOLD / "long").glob("*.jsonl")) if not p.stem.endswith("held-out")]
    return sets + long


@pytest.mark.parametrize(("name", "path"), _gold_sets(), ids=lambda x: getattr(x, "name", x))
def test_every_gold_set_scores_all_right_as_its_own_answer(name: str, path: Path) -> None:
    stem = name.split("-")[0].removesuffix("_zh_ja")
    schema_file = GOLD / "long" / f"{stem}.schema.json"
    schema = (schema_from_body(json.loads(schema_file.read_text()), str(schema_file)) if path.parent.name
              == "long" else load_schema(stem))  # fmt: skip
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert rows
    for row in rows:
        scored = score_record(schema, row["id"], row["gold"], "ok", row["gold"])
        assert all(scored.fields.values()), (row["id"], scored.fields)
