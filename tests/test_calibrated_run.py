"""A run applies the calibration that matches its schema body, model and engine, and says so; without
one it holds every value to the conservative default and no enum passes. Real model, real SQLite."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from formwork.db.models import Calibration, Record, Run, RunResult
from formwork.db.session import session_factory
from formwork.flows.batch_extract import batch_extract
from formwork.schemas.registry import load_schema

pytestmark = pytest.mark.slow
EXPENSE = load_schema("expense")


def _calibration(model: str, engine: str, threshold: float | None) -> Calibration:
    return Calibration(schema_name=EXPENSE.name, schema_version=EXPENSE.version, schema_hash=EXPENSE.digest,
                       model=model, engine=engine, mode="two-pass", method="least-confidence",
                       threshold=threshold, target=0.95, level=0.9, bound=0.955, kept=50, correct=50,
                       gold_hash="0" * 64, gold_size=60)  # fmt: skip


def _results(db_url: str, run_id: int) -> tuple[Run, list[RunResult]]:
    with session_factory(db_url)() as session:
        rows = session.scalars(select(RunResult).join(Record).where(RunResult.run_id == run_id)).all()
        return session.get(Run, run_id), list(rows)


def test_a_run_picks_up_its_calibration_and_says_what_it_guarantees(
    prefect_harness, local_engine, monkeypatch, write_jsonl, db_url
) -> None:
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    first = batch_extract(str(write_jsonl([{"id": "a", "text": "Taxi 35 EUR, 2024-03-03, Tom"}])), "expense",
                          db_url=db_url)  # fmt: skip
    run, rows = _results(db_url, first.run_id)
    assert run.confidence["calibration"] is None and run.confidence["threshold"] == 0.99
    assert "uncalibrated" in first.confidence and "no enum or boolean passes" in first.confidence
    assert ("confidence bounds", first.confidence) in first.rows()
    # a label the text does not write is a choice (a written one, EUR via x-aliases, is read instead)
    chosen = [
        e for r in rows for e in r.evidence or [] if e["path"] in ("currency", "category") and not e["spans"]
    ]
    errors = " ".join(e for r in rows for e in r.errors)
    assert all(r.status != "ok" for r in rows) or not chosen  # an enum chosen, uncalibrated: never ok
    assert all(f"{e['path']} " in errors and "no calibration covers" in errors for e in chosen)

    model = run.formatting_model
    with session_factory(db_url)() as session:
        session.add(_calibration(model, "vllm", 0.5))  # another engine: not this run's
        session.add(mine := _calibration(model, "local", 0.0))
        session.commit()
        mine_id = mine.id
    second = batch_extract(str(write_jsonl([{"id": "b", "text": "Lunch 12.50 USD, 2024-03-04, Maria"}])),
                           "expense", db_url=db_url)  # fmt: skip
    run, rows = _results(db_url, second.run_id)
    assert run.confidence["calibration"] == mine_id and run.confidence["threshold"] == 0.0
    assert f"calibration {mine_id}, p >= 0" in second.confidence
    assert "precision of ok >= 0.955 at 90% confidence on 60 gold records" in second.confidence
    assert not any("no calibration covers" in e or "is below its bound" in e for r in rows for e in r.errors)
