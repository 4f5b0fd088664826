"""What a record cost, in a replay of part of a measured run: the run's calls and wall time over the
records the run read, not over the few gold records `--limit` scores (a run of 100 receipts at 29 s a
record was reported at 243 s a record when 12 of them were replayed)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from formwork.db.models import ModelCall, Run, RunResult
from formwork.db.session import session_factory
from formwork.db.store import start_run, store_records
from formwork.flows.eval_steps import costs
from formwork.schemas.registry import load_schema
from formwork.tasks.sources import InputRecord


@pytest.fixture
def session(db_url: str) -> Iterator[Session]:
    with session_factory(db_url)() as session:
        yield session


def test_a_replay_of_part_of_a_run_reports_what_a_record_of_the_run_cost(session: Session) -> None:
    ids = store_records(session, "g.jsonl", [InputRecord(f"r{i}", f"Taxi {i} EUR") for i in range(8)])
    run_id = start_run(session, load_schema("expense"), flow="evaluate", source="eval:g.jsonl#one-pass",
                       engine="local", reasoning_model="m", formatting_model="m")  # fmt: skip
    run = session.get(Run, run_id)
    assert run is not None
    run.finished_at = run.started_at + timedelta(seconds=80)  # 8 records, 10 s each
    session.add_all([RunResult(run_id=run_id, record_id=i, status="ok") for i in ids])
    session.add_all([ModelCall(run_id=run_id, record_id=i, pass_name="formatting", model="m", prompt_hash="h",
                               prompt_tokens=500, completion_tokens=40, max_tokens=64, finish_reason="stop",
                               duration_s=9.0) for i in ids])  # fmt: skip
    session.commit()
    cost = costs(session, run_id)
    assert cost["wall_seconds_per_record"] == pytest.approx(10.0)
    assert cost["model_seconds_per_record"] == pytest.approx(9.0)
    assert cost["prompt_tokens_per_record"] == 500 and cost["completion_tokens_per_record"] == 40
    assert cost["calls"] == 8
