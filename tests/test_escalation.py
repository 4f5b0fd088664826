"""Escalation (tasks.escalation): `escalate_to` read into settings, and a row two models read combined
value by value. The rows are judged by the real judge and held to hand-made policies."""

from __future__ import annotations

import pytest

from formwork.tasks.confidence.policy import Policy
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.decide import decide
from formwork.tasks.escalation import combine
from formwork.tasks.settings import EscalationProblem, Settings, escalation_overrides
from tests.test_decide import SCHEMA, claims, read

LOCAL = {"engine": "local", "local_model": "qwen2.5-coder-1.5b", "local_model_path": None}
SURE_ALONE = Policy("calibrated", ScoreModel({"own": 1.0}), claims(0.9))  # certifies p >= 0.9


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("qwen2.5-coder-1.5b", LOCAL),
        ("@two-readings", {"mode": "two-readings"}),
        ("qwen2.5-coder-1.5b@two-pass", LOCAL | {"mode": "two-pass"}),
        ("vllm:http://gpu:8000/v1#big", {"engine": "vllm", "vllm_url": "http://gpu:8000/v1",
                                         "vllm_model": "big"}),
        ("openai:#qwen", {"engine": "openai", "openai_model": "qwen"}),
    ],
)  # fmt: skip
def test_escalate_to_names_a_model_a_mode_or_a_server(spec: str, expected: dict) -> None:
    found = escalation_overrides(spec)
    assert found == expected
    Settings(**found)  # every override is a setting


@pytest.mark.parametrize("spec", ["", "@three-pass", "  "])
def test_an_escalation_that_names_nothing_is_refused_with_what_to_write(spec: str) -> None:
    with pytest.raises(EscalationProblem, match=r"mode|empty"):
        escalation_overrides(spec)


def _second(who: tuple, amount: tuple):
    """The stronger model's row, held to its own calibration."""
    verdict = read(who=who, amount=amount, category=("meals", 0.99))
    return decide(SCHEMA, {"one-pass": verdict}, SURE_ALONE, {}, False)


def _first(who: tuple, amount: tuple) -> dict:
    """The first model's stored row: what it kept and its trust."""
    verdict = decide(SCHEMA, {"one-pass": read(who=who, amount=amount, category=("meals", 0.99))}, SURE_ALONE,
                     {}, False)  # fmt: skip
    return {"data": verdict.data, "trust": verdict.trust}


def test_the_stronger_models_certified_values_fill_what_the_first_left_unsure() -> None:
    first = _first(("Maria", 0.5), (42.8, 0.99))  # who unsure, amount certified
    second = _second(("Maria", 0.97), (42.8, 0.5))
    row = combine(SCHEMA, first, "small", second, "large", measured_on_escalated=True)
    assert row.status == "ok" and row.data == {"who": "Maria", "amount": 42.8, "category": "meals"}
    by_path = {t["path"]: t["certified_by"] for t in row.trust}
    assert by_path == {"who": "large", "amount": "small", "category": "large"}


def test_a_value_neither_model_certifies_stays_unsure() -> None:
    first = _first(("Maria", 0.5), (42.8, 0.99))
    second = _second(("Maria", 0.6), (42.8, 0.99))
    row = combine(SCHEMA, first, "small", second, "large", measured_on_escalated=True)
    assert row.status == "partial" and row.data["who"] is None
    assert any(e.startswith("who ") and "dropped" in e for e in row.errors)


def _outcome(record_id: int, verdict) -> object:
    from formwork.tasks.calls import Outcome

    return Outcome(record_id, verdict, attempts=1)


def test_no_entry_waits_for_a_reader_that_would_answer_the_same(any_db_url: str) -> None:
    """A row held back only by its thresholds is never queued for the same model (greedy, it answers the
    same); with a stronger reader named it waits as an escalation, due at once; a failed row still
    waits as a retry."""
    from sqlalchemy import select

    from formwork.db.models import RetryEntry
    from formwork.db.session import session_factory
    from formwork.db.store import QueuePolicy, save_outcomes, start_run, store_records
    from formwork.tasks.sources import InputRecord
    from formwork.tasks.validate import Verdict

    unsure = _second(("Maria", 0.5), (42.8, 0.99))
    assert unsure.status == "partial" and unsure.unsure_only
    failed = Verdict("failed", None, ["no JSON came back"])
    with session_factory(any_db_url)() as session:
        ids = store_records(session, "e.jsonl", [InputRecord(f"r{i}", f"text {i}", {}) for i in range(3)])
        run = start_run(session, SCHEMA, flow="t", source="e.jsonl", engine="local", reasoning_model="m",
                        formatting_model="m")  # fmt: skip
        outcomes = [_outcome(ids[0], unsure), _outcome(ids[1], failed)]
        save_outcomes(session, run, SCHEMA, outcomes, QueuePolicy(include_partial=True))
        entries = {e.record_id: e for e in session.scalars(select(RetryEntry))}
        assert set(entries) == {ids[1]} and entries[ids[1]].kind == "retry"  # not the unsure one
        save_outcomes(
            session, run, SCHEMA, [_outcome(ids[2], unsure)], QueuePolicy(escalate_to="big@one-pass")
        )
        entry = session.scalars(select(RetryEntry).where(RetryEntry.record_id == ids[2])).one()
        assert (entry.kind, entry.escalate_to, entry.state) == ("escalation", "big@one-pass", "waiting")
        assert entry.next_attempt_at.replace(tzinfo=None) <= entry.updated_at.replace(tzinfo=None)  # due now
        save_outcomes(session, run, SCHEMA, [_outcome(ids[2], unsure)],
                      QueuePolicy(escalate_to="big@one-pass", escalating=True))  # fmt: skip
        assert session.scalars(select(RetryEntry).where(RetryEntry.record_id == ids[2])).all() == []


def test_a_row_escalates_only_where_the_stronger_reader_certifies_a_field_it_left_unsure() -> None:
    """`who` is unsure: a stronger reader whose calibration certifies only `amount` could change
    nothing, so nothing waits for it; one that certifies `who`, or one not known until it reads, may."""
    from formwork.db.store import QueuePolicy

    unsure = _outcome(1, _second(("Maria", 0.5), (42.8, 0.99)))
    assert {t["path"] for t in unsure.verdict.trust if not t["certified"]} == {"who"}
    assert QueuePolicy(escalate_to="big", escalate_fields=("amount", "category")).wants(unsure) is None
    assert QueuePolicy(escalate_to="big", escalate_fields=("amount", "who")).wants(unsure) == "escalation"
    assert QueuePolicy(escalate_to="big").wants(unsure) == "escalation"
    assert QueuePolicy(escalate_to="big", escalate_fields=()).wants(unsure) is None
