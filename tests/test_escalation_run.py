"""Escalation end to end, on real models: the bundled 135M model reads, no calibration certifies its
fields, so each row held back only by its thresholds waits for Qwen2.5-Coder-1.5B (installed by name);
`formwork retry` (or `--escalate now`) reads it there, and the 1.5B's values come back `unsure`: its
calibration was measured on all records, not on the escalated ones (issue 52, point 4), so it certifies
none of them there. The calibrations are made here
(no gold set this small certifies anything); the models, the flows, the queue and SQLite are real."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from formwork.db.models import Calibration, Record, Result, RetryEntry
from formwork.db.session import session_factory
from formwork.flows.cli import app
from formwork.schemas.registry import load_schema
from formwork.tasks.confidence.certify import FieldClaim, field_level, lower_bound
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.escalation import MEASURED_ON_ALL
from formwork.tasks.evaluation.calibration import schema_fields
from formwork.tasks.evaluation.key import CalibrationKey, calibration_key, escalation_key
from formwork.tasks.settings import Settings
from tests.run_exit import expected_exit

pytestmark = pytest.mark.slow
EXPENSE = load_schema("expense")
STRONGER = "qwen2.5-coder-1.5b@one-pass"
runner = CliRunner()


def _calibration(key: CalibrationKey, threshold: float | None) -> Calibration:
    """A calibration for `key` whose score is ~1 for every value, certifying every field at `threshold`
    (None: none)."""
    fields = schema_fields(EXPENSE.checked_body)
    share = field_level(0.9, len(fields))
    kept = 90 if threshold is not None else 0
    bound = lower_bound(kept, kept, share)
    claims = {f: FieldClaim(f, 0.95, share, 100, threshold, kept, kept, bound).as_dict() for f in fields}
    return Calibration(**key.as_dict(), method="per-value", threshold=None, target=0.95, level=0.9, bound=0.0,
                       kept=0, correct=0, fields=claims, score_model=ScoreModel({}, 20.0).as_dict(),
                       gold_hash="0" * 64, gold_size=100)  # fmt: skip


TEXTS = [
    {"id": "a", "text": "Taxi 35 EUR, 2024-03-03, Tom"},
    {"id": "b", "text": "Lunch 12.50 USD on 2024-03-04, Maria"},
]


def _first_run(engines, monkeypatch, write_jsonl, db: str, large_threshold: float | None):
    """The bundled model reads TEXTS under a calibration certifying none of its fields, with the 1.5B
    named to escalate to, under one certifying every field at `large_threshold` (None: none)."""
    local_engine, qwen_engine = engines
    for name, value in {"MODE": "one-pass", "MAX_ATTEMPTS": "1", "DB_URL": db}.items():
        monkeypatch.setenv(f"FORMWORK_{name}", value)
    small = calibration_key(Settings(), EXPENSE, (local_engine, local_engine))
    large = calibration_key(Settings(local_model="qwen2.5-coder-1.5b"), EXPENSE, (qwen_engine, qwen_engine))
    with session_factory(db)() as session:
        session.add_all([_calibration(small, None), _calibration(large, large_threshold)])
        session.commit()
    return runner.invoke(
        app, ["run", str(write_jsonl(TEXTS)), "--schema", "expense", "--escalate-to", STRONGER]
    )


def test_an_unsure_row_reaches_the_stronger_model_and_comes_back_with_its_values_unsure(
    prefect_harness, local_engine, qwen_engine, monkeypatch, write_jsonl, tmp_path
) -> None:
    db = f"sqlite:///{tmp_path}/escalate.db"
    first = _first_run((local_engine, qwen_engine), monkeypatch, write_jsonl, db, 0.5)
    assert first.exit_code == expected_exit(first.output), first.output
    with session_factory(db)() as session:
        waiting = session.scalars(select(RetryEntry)).all()
        rows = {r.record_id: r for r in session.scalars(select(Result))}
    assert all(r.status != "ok" for r in rows.values())  # nothing certified by the small model
    escalated = {e.record_id for e in waiting if e.kind == "escalation" and e.escalate_to == STRONGER}
    assert escalated and escalated == {i for i, r in rows.items() if r.status == "partial"}

    again = runner.invoke(app, ["retry", "--kind", "escalation"])
    assert again.exit_code == expected_exit(again.output), again.output
    with session_factory(db)() as session:
        results = {key: r for key, r in session.execute(select(Record.key, Result).join(Result))}
        left = session.scalars(select(RetryEntry).where(RetryEntry.kind == "escalation")).all()
    assert left == []  # read by the stronger model: nothing else waits for it
    for key, result in results.items():
        if result.record_id not in escalated:
            continue
        assert not any(t.get("certified_by") for t in result.trust), key  # the small model certified none
        unsure = [t for t in result.trust if t["why"] == MEASURED_ON_ALL]
        assert unsure and result.status == "partial", key  # what its all-records calibration certified
        for entry in unsure:  # the row holds what the stronger model read, as read
            assert result.data.get(entry["path"]) == entry["value"], (key, entry["path"])

    # the same texts again under new ids (greedy: the small model is unsure of them again), read by the
    # stronger model before the run ends
    same = [
        {"id": f"{t['id']}2", "text": t["text"]}
        for t in TEXTS
        if t["id"] in {k for k, r in results.items() if r.record_id in escalated}
    ]
    now = runner.invoke(app, ["run", str(write_jsonl(same, "again.jsonl")), "--schema", "expense",
                              "--escalate-to", STRONGER, "--escalate", "now"])  # fmt: skip
    assert now.exit_code == expected_exit(now.output), now.output
    assert f"{len(same)} records read again by the stronger reader" in " ".join(now.output.split())
    with session_factory(db)() as session:
        rows = session.scalars(
            select(Result).join(Record).where(Record.key.in_([t["id"] for t in same]))
        ).all()
        assert session.scalars(select(RetryEntry).where(RetryEntry.kind == "escalation")).all() == []
    assert len(rows) == len(same)
    for row in rows:
        assert any(t["why"] == MEASURED_ON_ALL for t in row.trust), json.dumps(row.trust)[:500]
        assert not any(t.get("certified_by") for t in row.trust), json.dumps(row.trust)[:500]


def test_the_escalation_is_keyed_as_the_stronger_reader_will_run(
    local_engine, qwen_engine, monkeypatch
) -> None:
    """The run knows the stronger reader's calibration before opening it: the same key its own run has."""
    monkeypatch.setenv("FORMWORK_MODE", "two-pass")
    small = (local_engine, local_engine)
    expected = calibration_key(Settings(local_model="qwen2.5-coder-1.5b", mode="one-pass"), EXPENSE,
                               (qwen_engine, qwen_engine))  # fmt: skip
    assert escalation_key(Settings(escalate_to=STRONGER), EXPENSE, small) == expected
    in_two = calibration_key(Settings(mode="two-readings"), EXPENSE, small)
    assert escalation_key(Settings(escalate_to="@two-readings"), EXPENSE, small) == in_two
    assert escalation_key(Settings(escalate_to="vllm:http://127.0.0.1:9/v1"), EXPENSE, small) is None


def test_no_row_waits_for_a_stronger_model_that_certifies_none_of_its_fields(
    prefect_harness, local_engine, qwen_engine, monkeypatch, write_jsonl, tmp_path
) -> None:
    db = f"sqlite:///{tmp_path}/nowhere.db"
    done = _first_run((local_engine, qwen_engine), monkeypatch, write_jsonl, db, None)  # certifies nothing
    assert done.exit_code == expected_exit(done.output), done.output
    with session_factory(db)() as session:
        rows = session.scalars(select(Result)).all()
        kinds = [e.kind for e in session.scalars(select(RetryEntry))]
    assert any(r.status == "partial" for r in rows)  # unsure, yet the 1.5B could change nothing
    assert "escalation" not in kinds
