"""The cascade's merge and who escalates (issue 54, points 1, 6 and 9): two readers' lists are never
mixed by position, a value two certified readers disagree on is certified by neither, each kept value
keeps the evidence of the reader it came from, and a row whose values the judge refused reaches the
stronger reader once the first cannot settle it. The merges are those of a stronger reader whose
calibration was measured on escalated records (`measured_on_escalated`; without one none of its values
is certified: tests/test_cascade_level.py). The readings are judged by the real judge, their
answers written at stated probabilities (no model writes a chosen value at a chosen probability)."""

from __future__ import annotations

import json
import math
from typing import Any

from sqlalchemy import select

from formwork.schemas.registry import schema_from_body
from formwork.tasks.calls import Outcome
from formwork.tasks.confidence.certify import FieldClaim
from formwork.tasks.confidence.policy import Policy
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.decide import decide
from formwork.tasks.engines.base import Completion
from formwork.tasks.escalation import combine
from formwork.tasks.validate import Verdict, judge
from tests.test_decide import SCHEMA, claims, read

RECEIPT = schema_from_body(
    {
        "title": "receipt_merge",
        "type": "object",
        "properties": {
            "shop": {"type": ["string", "null"], "description": "The shop."},
            "items": {
                "type": "array",
                "description": "Each line bought.",
                "items": {
                    "type": "object",
                    "properties": {"description": {"type": "string"}, "amount": {"type": "number"}},
                    "required": ["description", "amount"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["shop", "items"],
        "additionalProperties": False,
    },
    "receipt_merge.json",
)
RECEIPT_TEXT = "Corner Shop\nMilk 1.15\nBread 2.50\nEggs 3.20"
NOTES = Completion("notes", "stop", 1, 1, 0.0, "scripted")
SURE = Policy("calibrated", ScoreModel({"own": 1.0}), claims(0.9))  # certifies p >= 0.9
RECEIPT_SURE = Policy("calibrated", ScoreModel({"own": 1.0}), {
    name: FieldClaim(name, 0.95, 0.97, 100, 0.9, 90, 90, 0.97) for name in ("shop", "items[].description",
                                                                             "items[].amount")})  # fmt: skip


def _receipt(shop: tuple[str, float], items: list[tuple[tuple[str, float], tuple[float, float]]]) -> Verdict:
    """The receipt read with each value written at its probability, judged and held to `SURE`."""
    pieces: list[tuple[str, float]] = [('{"shop": ', 0.0), (json.dumps(shop[0]), math.log(shop[1])),
                                       (', "items": [', 0.0)]  # fmt: skip
    for i, ((name, p_name), (amount, p_amount)) in enumerate(items):
        pieces += [(("" if i == 0 else ", ") + '{"description": ', 0.0), (json.dumps(name), math.log(p_name)),
                   (', "amount": ', 0.0), (json.dumps(amount), math.log(p_amount)), ("}", 0.0)]  # fmt: skip
    pieces.append(("]}", 0.0))
    text = "".join(p for p, _ in pieces)
    written = Completion(text, "stop", 1, 1, 0.0, "scripted", tuple(pieces))
    reading = judge(RECEIPT, RECEIPT_TEXT, NOTES, written)
    return decide(RECEIPT, {"one-pass": reading}, RECEIPT_SURE, {}, False)


def _stored(verdict: Verdict) -> dict[str, Any]:
    """The first reader's row as db.queries.earlier_rows hands it to the merge."""
    return {"data": verdict.data, "trust": verdict.trust, "evidence": verdict.evidence}


def _items_of(verdict: Verdict) -> list[tuple[str, float]]:
    return [(item.get("description"), item.get("amount")) for item in verdict.data["items"]]


def test_an_item_is_never_made_of_two_readers_items_by_position() -> None:
    """The first reader certified its whole list (Bread 2.50), not the shop; the stronger one was unsure
    of Milk's name. By position, Bread's certified name landed on Milk's price: an `ok` Bread 1.15."""
    first = _receipt(("Corner Shop", 0.5), [(("Bread", 0.99), (2.5, 0.99))])
    second = _receipt(("Corner Shop", 0.99), [(("Milk", 0.5), (1.15, 0.99)), (("Bread", 0.99), (2.5, 0.99))])
    assert first.status == second.status == "partial"
    row = combine(RECEIPT, _stored(first), "small", second, "large", measured_on_escalated=True)
    assert ("Bread", 1.15) not in _items_of(row)
    assert _items_of(row) == [("Bread", 2.5)]  # the list one reader certified whole, from that reader
    by_path = {t["path"]: t["certified_by"] for t in row.trust}
    assert by_path == {"shop": "large", "items[0].description": "small", "items[0].amount": "small"}
    assert row.status == "ok"


def test_where_neither_certifies_its_list_whole_the_list_comes_whole_from_one_reader() -> None:
    first = _receipt(("Corner Shop", 0.5), [(("Milk", 0.99), (1.15, 0.5)), (("Bread", 0.5), (2.5, 0.99))])
    second = _receipt(("Corner Shop", 0.99), [(("Milk", 0.5), (1.15, 0.99)), (("Bread", 0.99), (2.5, 0.5))])
    row = combine(RECEIPT, _stored(first), "small", second, "large", measured_on_escalated=True)
    assert row.status == "partial"
    items = {t["path"]: (t["certified_by"], t["value"]) for t in row.trust if t["path"].startswith("items")}
    assert {by for by, _ in items.values()} <= {"large", None}  # no value of the first reader's list
    assert items["items[0].amount"] == ("large", 1.15) and items["items[1].description"] == ("large", "Bread")
    assert row.data["items"][0].get("description") is None and row.data["items"][1].get("amount") is None


def test_lists_two_readers_certify_differently_keep_only_the_items_both_give() -> None:
    first = _receipt(("Corner Shop", 0.5), [(("Milk", 0.99), (1.15, 0.99)), (("Bread", 0.99), (2.5, 0.99))])
    second = _receipt(("Corner Shop", 0.99), [(("Milk", 0.99), (1.15, 0.99)), (("Eggs", 0.99), (3.2, 0.99))])
    row = combine(RECEIPT, _stored(first), "small", second, "large", measured_on_escalated=True)
    assert row.status == "partial"
    assert row.data["items"][0] == {"description": "Milk", "amount": 1.15}  # both give it
    assert row.data["items"][1] == {}  # Eggs: only the stronger reader's list has it, the first's has Bread
    eggs = [t for t in row.trust if t["path"].startswith("items[1]")]
    assert eggs and all(not t["certified"] and t["certified_by"] is None for t in eggs)
    assert any(e.startswith('items[1].description "Eggs" dropped') and "small" in e and "large" in e
               for e in row.errors)  # fmt: skip


def _flat(who: tuple, amount: tuple) -> Verdict:
    verdict = read(who=who, amount=amount, category=("meals", 0.99))
    return decide(SCHEMA, {"one-pass": verdict}, SURE, {}, False)


def test_a_value_two_certified_readers_disagree_on_is_certified_by_neither() -> None:
    first = _flat(("Maria", 0.5), (42.8, 0.99))
    second = _flat(("Maria", 0.95), (3, 0.99))
    row = combine(SCHEMA, _stored(first), "small", second, "large", measured_on_escalated=True)
    assert row.status == "partial" and "amount" not in row.data  # the schema cannot hold its null
    amount = next(t for t in row.trust if t["path"] == "amount")
    assert not amount["certified"] and amount["certified_by"] is None
    assert "large certified 3 and small certified 42.8" in amount["why"]
    assert any(e.startswith("amount 3 dropped") and "neither is certified" in e for e in row.errors)
    assert not [r for r in row.evidence if r["path"] == "amount" and r["kind"] != "refused"]


def test_a_value_kept_from_the_first_reader_keeps_the_first_readers_evidence() -> None:
    """The stronger reader was unsure of 3 (the people) as the amount: the row keeps the first reader's
    42.8, backed by the text's 42.80, and neither the span of the 3 nor a `refused` row."""
    first = _flat(("Maria", 0.5), (42.8, 0.99))
    second = _flat(("Maria", 0.97), (3, 0.5))
    assert [r["quote"] for r in second.evidence if r["path"] == "amount"] == ["3"]
    row = combine(SCHEMA, _stored(first), "small", second, "large", measured_on_escalated=True)
    assert row.status == "ok" and row.data["amount"] == 42.8
    amount = [r for r in row.evidence if r["path"] == "amount"]
    assert amount and all(r["value"] == 42.8 and r["quote"] == "42.80" for r in amount)
    assert amount == [r for r in first.evidence if r["path"] == "amount"]
    who = [r for r in row.evidence if r["path"] == "who"]
    assert who == [r for r in second.evidence if r["path"] == "who"] and who[0]["value"] == "Maria"


def _refused() -> Outcome:
    """A row whose `who` the judge refused (Bob is not in the text): partial, and no threshold's doing."""
    bob = read(who=("Bob", 0.99), amount=(42.8, 0.99), category=("meals", 0.99))
    verdict = decide(SCHEMA, {"one-pass": bob}, SURE, {}, False)
    assert verdict.status == "partial" and not verdict.unsure_only
    assert any(v["path"] == "who" and v["verdict"] == "refused" for v in verdict.values)
    return Outcome(1, verdict, attempts=1)


def test_a_row_whose_values_were_refused_goes_to_the_stronger_reader_once_the_first_cannot_mend_it() -> None:
    from formwork.db.store import QueuePolicy

    refused = _refused()
    assert QueuePolicy(escalate_to="big").wants(refused) == "escalation"  # no retry is coming
    assert QueuePolicy().wants(refused) is None  # no one to go to
    assert QueuePolicy(escalate_to="big", escalating=True).wants(refused) is None  # it was the stronger one
    certifies_amount = QueuePolicy(escalate_to="big", escalate_fields=("amount",))
    assert certifies_amount.wants(refused) is None  # it certifies no field the judge refused
    partial = QueuePolicy(include_partial=True, max_attempts=3, escalate_to="big")
    assert [partial.wants(refused, tries) for tries in range(3)] == ["retry", "retry", "escalation"]
    failed = Outcome(2, Verdict("failed", None, ["no JSON came back"]), attempts=1)
    assert partial.wants(failed, 2) == "retry"  # nothing refused: the stronger reader is not for an outage


def test_a_retried_row_whose_tries_are_spent_waits_for_the_stronger_reader_not_dead(any_db_url: str) -> None:
    """The first run named the stronger reader; the worker retrying does not: the entry remembers it, and
    the last try turns the entry into an escalation with its own tries, due at once, not a dead letter."""
    from formwork.db.models import RetryEntry
    from formwork.db.session import session_factory
    from formwork.db.store import QueuePolicy, save_outcomes, start_run, store_records
    from formwork.tasks.sources import InputRecord

    with session_factory(any_db_url)() as session:
        (record,) = store_records(session, "r.jsonl", [InputRecord("r1", "text", {})])
        run = start_run(session, SCHEMA, flow="t", source="r.jsonl", engine="local", reasoning_model="m",
                        formatting_model="m")  # fmt: skip
        refused = _refused()
        refused.record_id = record
        named = QueuePolicy(include_partial=True, max_attempts=3, escalate_to="big@one-pass")
        save_outcomes(session, run, SCHEMA, [refused], named)
        entry = session.scalars(select(RetryEntry)).one()
        assert (entry.kind, entry.state, entry.attempts, entry.escalate_to) == ("retry", "waiting", 1,
                                                                                "big@one-pass")  # fmt: skip
        for _ in range(2):  # `formwork retry` on a worker that names no stronger reader
            save_outcomes(session, run, SCHEMA, [refused], QueuePolicy(include_partial=True, max_attempts=3))
        session.expire_all()
        entry = session.scalars(select(RetryEntry)).one()
        assert (entry.kind, entry.state, entry.attempts, entry.escalate_to) == ("escalation", "waiting", 1,
                                                                                "big@one-pass")  # fmt: skip


def test_the_first_readers_stored_evidence_reaches_the_merge(any_db_url: str) -> None:
    from formwork.db.queries import earlier_rows
    from formwork.db.session import session_factory
    from formwork.db.store import QueuePolicy, save_outcomes, start_run, store_records
    from formwork.tasks.sources import InputRecord

    first = _flat(("Maria", 0.5), (42.8, 0.99))
    with session_factory(any_db_url)() as session:
        (record,) = store_records(session, "r.jsonl", [InputRecord("r1", "text", {})])
        run = start_run(session, SCHEMA, flow="t", source="r.jsonl", engine="local", reasoning_model="m",
                        formatting_model="small")  # fmt: skip
        save_outcomes(session, run, SCHEMA, [Outcome(record, first, attempts=1)], QueuePolicy())
        stored = earlier_rows(session, [record], SCHEMA.name, SCHEMA.version)[record]
    assert stored["model"] == "small" and stored["evidence"] == first.evidence
