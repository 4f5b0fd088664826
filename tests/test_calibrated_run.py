"""A run applies the calibration that matches its full key and says per field what it guarantees;
without one it holds every value to the conservative default, no enum passes and no row is `ok`. Real
model, real SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from formwork.db.models import Calibration, Record, Run, RunResult
from formwork.db.session import session_factory
from formwork.flows.batch_extract import batch_extract
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import UNVOUCHED
from formwork.tasks.confidence.certify import FieldClaim, field_level, lower_bound
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.evaluation.calibration import schema_fields
from formwork.tasks.evaluation.key import CalibrationKey, calibration_key
from formwork.tasks.settings import Settings

pytestmark = pytest.mark.slow
EXPENSE = load_schema("expense")


def _calibration(key: CalibrationKey, **values: object) -> Calibration:
    """A calibration for `key` whose score certifies every value (a score of ~1 against 0.5)."""
    fields = schema_fields(EXPENSE.checked_body)
    share = field_level(0.9, len(fields))
    claims = {f: FieldClaim(f, 0.95, share, 100, 0.5, 90, 90, lower_bound(90, 90, share)).as_dict()
              for f in fields}  # fmt: skip
    sure = ScoreModel({}, 20.0).as_dict()
    return Calibration(**(key.as_dict() | values), method="per-value", threshold=None, target=0.95, level=0.9,
                       bound=0.0, kept=0, correct=0, fields=claims, score_model=sure, gold_hash="0" * 64,
                       gold_size=100)  # fmt: skip


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
    assert run.confidence["calibration"] is None and "so no row is ok" in first.confidence
    assert ("confidence", first.confidence) in first.rows() and first.confidence.startswith("uncalibrated")
    # a label the text does not write is a choice (a written one, EUR via x-aliases, is read instead)
    chosen = [t for r in rows for t in r.trust or [] if t["path"] == "category" and t["reading"]]
    errors = " ".join(e for r in rows for e in r.errors)
    assert all(r.status != "ok" for r in rows)  # uncalibrated: no row is ok, whatever its values
    assert all(r.status == "partial" for r in rows if any(e.startswith(UNVOUCHED) for e in r.errors))
    assert all(not t["certified"] for t in chosen) and ("no calibration covers this choice" in errors) == any(
        t["readings"][t["reading"]]["value"] is not None for t in chosen
    )

    key = calibration_key(Settings(), EXPENSE, (local_engine, local_engine))
    assert key.model == run.formatting_model and key.model_hash and key.reasoning_model == run.reasoning_model
    with session_factory(db_url)() as session:
        session.add(_calibration(key, engine="vllm"))  # another engine: not this run's
        session.add(_calibration(key, mode="one-pass"))  # another mode: not this run's
        session.add(mine := _calibration(key))
        session.add(_calibration(key, sampling="other"))  # newer, but sampled otherwise: not this run's
        session.commit()
        mine_id = mine.id
    second = batch_extract(str(write_jsonl([{"id": "b", "text": "Lunch 12.50 USD, 2024-03-04, Maria"}])),
                           "expense", db_url=db_url)  # fmt: skip
    run, rows = _results(db_url, second.run_id)
    assert run.confidence["calibration"] == mine_id
    assert second.confidence.startswith(f"calibration {mine_id}: 6 of 6 fields certified on 100 gold records")
    assert ("guarantee: amount", run.confidence["fields"]["amount"]) in second.rows()
    assert not any("no calibration covers" in e for r in rows for e in r.errors)
    assert not any(e.startswith(UNVOUCHED) for r in rows for e in r.errors)  # a calibration vouches
    assert all(t["certified"] for r in rows for t in r.trust or [])  # every value kept scores ~1


def test_a_fresh_database_uses_the_shipped_calibration_of_its_key_and_says_so(
    prefect_harness, local_engine, monkeypatch, write_jsonl, tmp_path
) -> None:
    """A calibration made here, exported as a shipped file: a run on a database with none of its own
    applies it and its summary names it."""
    from formwork.db.calibration_store import export_calibration
    from formwork.tasks.evaluation import shipped

    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    made_in, fresh = f"sqlite:///{tmp_path}/made.db", f"sqlite:///{tmp_path}/fresh.db"
    key = calibration_key(Settings(), EXPENSE, (local_engine, local_engine))
    with session_factory(made_in)() as session:
        session.add(row := _calibration(key))
        session.commit()
        export_calibration(row, tmp_path / "expense-smollm.json")
    monkeypatch.setattr(shipped, "SHIPPED", tmp_path)
    done = batch_extract(str(write_jsonl([{"id": "b", "text": "Lunch 12.50 USD, 2024-03-04, Maria"}])),
                         "expense", db_url=fresh)  # fmt: skip
    run, rows = _results(fresh, done.run_id)
    assert run.confidence["calibration"] == "shipped in expense-smollm.json"
    assert done.confidence.startswith("calibration shipped in expense-smollm.json: 6 of 6 fields certified")
    assert not any("no calibration covers" in e for r in rows for e in r.errors)
