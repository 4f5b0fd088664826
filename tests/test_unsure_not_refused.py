"""Issue 54 point 27: a value dropped as unsure is not a value the text did not back.

The run summary's "values not backed by the text" counts only values the judge refused as not backed,
each once; a value the policy dropped as unsure gets no stored `refused` evidence row (its trust row
says why it was dropped). The readings are judged by the real judge; their answers are written at
stated probabilities (as in tests/test_decide.py), one token per value, every other token forced.
"""

from __future__ import annotations

from typing import Any

from formwork.db.queries import run_summary
from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, finish_run, save_outcomes, start_run, store_records
from formwork.schemas.registry import schema_from_body
from formwork.tasks.calls import Outcome
from formwork.tasks.confidence.certify import FieldClaim
from formwork.tasks.confidence.policy import Policy
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.decide import decide
from formwork.tasks.engines.base import Completion
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict
from tests.test_decide import read as scripted

BODY: dict[str, Any] = {
    "title": "unsure_test",
    "type": "object",
    "properties": {
        "who": {"type": ["string", "null"], "maxLength": 40, "description": "Who paid."},
        "amount": {"type": ["number", "null"], "description": "How much."},
        "category": {"enum": ["meals", "travel", None], "description": "What for."},
    },
    "required": ["who", "amount", "category"],
    "additionalProperties": False,
}
SCHEMA = schema_from_body(BODY, "unsure_test.json")
TEXT = "Maria paid 42.80 EUR for lunch with the client, 3 people."
NOTES = Completion("notes", "stop", 1, 1, 0.0, "scripted")
CLAIMS = {name: FieldClaim(name, 0.95, 0.97, 100, 0.9, 90, 90, 0.97) for name in BODY["properties"]}
POLICY = Policy("calibrated", ScoreModel({"own": 1.0}), CLAIMS)  # the score is the probability itself


def read(**values: tuple[Any, float]) -> Verdict:
    """The judged verdict of an answer writing each field's value at its probability, of this TEXT."""
    return scripted(SCHEMA, TEXT, **values)


def _row() -> Verdict:
    """`who` refused (the text names no Zorro), `amount` read but unsure (0.5 < 0.9), `category` sure."""
    reading = read(who=("Zorro", 0.99), amount=(42.8, 0.5), category=("meals", 0.99))
    return decide(SCHEMA, {"two-pass": reading}, POLICY, {}, False)


def test_a_value_dropped_as_unsure_gets_no_refused_evidence_row() -> None:
    verdict = _row()
    assert verdict.status == "partial" and verdict.data["amount"] is None  # dropped, as unsure
    assert "amount 42.8 dropped: unsure" in " ".join(verdict.errors)
    refused = [row["path"] for row in verdict.evidence if row["kind"] == "refused"]
    assert refused == ["who"]  # the judge's refusal, once; none for the unsure amount


def test_the_summary_counts_only_values_not_backed_by_the_text(db_url: str) -> None:
    with session_factory(db_url)() as session:
        [record_id] = store_records(session, "test", [InputRecord("k1", TEXT)])
        run_id = start_run(session, SCHEMA, flow="test", source="test", engine="local",
                           reasoning_model="m", formatting_model="m")  # fmt: skip
        save_outcomes(session, run_id, SCHEMA, [Outcome(record_id, _row(), 1)], QueuePolicy())
        finish_run(session, run_id)
        summary = run_summary(session, run_id)
    assert dict(summary.rows())["values not backed by the text"] == "1"  # Zorro; not the unsure 42.8
