"""A run applies the calibration that matches its schema body, model and engine, and says so; without
one it holds every value to the conservative default, no enum passes and no row is `ok`. Real model,
real SQLite."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from formwork.db.models import Calibration, Record, Run, RunResult
from formwork.db.session import session_factory
from formwork.flows.batch_extract import batch_extract
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import UNVOUCHED
from formwork.tasks.evaluation.key import CalibrationKey, calibration_key
from formwork.tasks.settings import Settings

pytestmark = pytest.mark.slow
EXPENSE = load_schema("expense")


def _calibration(key: CalibrationKey, threshold: float | None, **values: object) -> Calibration:
    return Calibration(**(key.as_dict() | values), method="least-confidence", threshold=threshold,
                       target=0.95, level=0.9, bound=0.955, kept=50, correct=50, values_bound=0.96,
                       values_kept=60, values_correct=60, gold_hash="0" * 64, gold_size=60)  # fmt: skip


def _results(db_url: str, run_id: int) -> tuple[Run, list[RunResult]]:
    with session_factory(db_url)() as session:
        rows = session.scalars(select(RunResult).join(Record).where(RunResult.run_id == run_id)).all()
        return session.get(Run, run_id), list(rows)


def test_a_run_picks_up_its_calibration_and_says_what_it_guarantees(
    prefect_harness, local_engine, monkeypatch, write_jsonl, any_db_url
) -> None:
    db_url = any_db_url
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
    assert all(r.status != "ok" for r in rows)  # uncalibrated: no row is ok, whatever its values
    assert all(r.status == "partial" for r in rows if any(e.startswith(UNVOUCHED) for e in r.errors))
    assert all(f"{e['path']} " in errors and "no calibration covers" in errors for e in chosen)

    key = calibration_key(Settings(), EXPENSE, (local_engine, local_engine))
    assert key.model == run.formatting_model and key.model_hash and key.reasoning_model == run.reasoning_model
    with session_factory(db_url)() as session:
        session.add(_calibration(key, 0.5, engine="vllm"))  # another engine: not this run's
        session.add(_calibration(key, 0.5, mode="one-pass"))  # another mode: not this run's
        session.add(mine := _calibration(key, 0.0))
        session.add(_calibration(key, 0.5, grounded=not key.grounded))  # newer, but not this run's
        session.commit()
        mine_id = mine.id
    second = batch_extract(str(write_jsonl([{"id": "b", "text": "Lunch 12.50 USD, 2024-03-04, Maria"}])),
                           "expense", db_url=db_url)  # fmt: skip
    run, rows = _results(db_url, second.run_id)
    assert run.confidence["calibration"] == mine_id and run.confidence["threshold"] == 0.0
    assert f"calibration {mine_id}, p >= 0" in second.confidence
    assert "precision of ok >= 0.955 at 90% confidence on 60 gold records" in second.confidence
    assert not any("no calibration covers" in e or "is below its bound" in e for r in rows for e in r.errors)
    assert not any(e.startswith(UNVOUCHED) for r in rows for e in r.errors)  # a calibration vouches


def test_a_fresh_database_uses_the_shipped_calibration_of_its_key_and_says_so(
    prefect_harness, local_engine, monkeypatch, write_jsonl, tmp_path
) -> None:
    """A calibration made here, exported as a shipped file: a run on a database with none of its own
    applies it and its summary names it."""
    from formwork.db.calibrations import export_calibration
    from formwork.tasks.evaluation import shipped

    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    made_in, fresh = f"sqlite:///{tmp_path}/made.db", f"sqlite:///{tmp_path}/fresh.db"
    key = calibration_key(Settings(), EXPENSE, (local_engine, local_engine))
    with session_factory(made_in)() as session:
        session.add(row := _calibration(key, 0.0))
        session.commit()
        export_calibration(row, tmp_path / "expense-smollm.json")
    monkeypatch.setattr(shipped, "SHIPPED", tmp_path)
    done = batch_extract(str(write_jsonl([{"id": "b", "text": "Lunch 12.50 USD, 2024-03-04, Maria"}])),
                         "expense", db_url=fresh)  # fmt: skip
    run, rows = _results(fresh, done.run_id)
    assert run.confidence["calibration"] == "shipped in expense-smollm.json"
    assert done.confidence.startswith("calibration shipped in expense-smollm.json, p >= 0: precision of ok")
    assert not any("no calibration covers" in e for r in rows for e in r.errors)
