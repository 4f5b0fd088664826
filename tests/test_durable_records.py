"""Every record's work is durable as soon as it is done (issue 28, deliver 1).

A real `formwork run` subprocess, all its records in ONE chunk, is SIGKILLed as soon as the first
result is in the database: before, a chunk's calls and results were written only when the chunk
ended, so no result could appear while the chunk was still running. Then, judged from the database:
every stored result has its reasoning and formatting calls and its run-history row, a call stored
without its result is one answered for a record still in flight (stored at once, issue 54 point 10,
and taken by the next run), and the next run processes only the rest (no call for a record the killed
run finished). On the embedded engine and on the real vLLM server, on SQLite and PostgreSQL.

The writer's own promise (a finished record is stored within its window, not at the chunk's end) is
pinned beside it on a real SQLite database, with outcomes handed in by hand.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from formwork.db.keeping import OutageWindow, save_chunk
from formwork.db.models import ModelCall, Record, RecordClaim, Result, RetryEntry, Run, RunResult
from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, start_run, store_records
from formwork.db.writer import RecordWriter
from formwork.schemas.registry import load_checked_schema
from formwork.tasks.calls import Outcome
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict
from tests import vllm_fixture as vf
from tests.killing import RECORDS, kill_at_first_result
from tests.run_exit import expected_exit


def _stored_results(db_url: str) -> list[int]:
    """Record ids of the result rows, read on a plain connection (never migrates, never takes a lock)."""
    engine = create_engine(db_url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return [row[0] for row in connection.execute(text("SELECT record_id FROM results"))]
    except SQLAlchemyError:  # not migrated yet, or briefly locked
        return []
    finally:
        engine.dispose()


def _environment(tmp_path: Path, engine: dict[str, str]) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    env = {key: value for key, value in os.environ.items() if not key.startswith("FORMWORK_")}
    return (
        env
        | engine
        | {
            "FORMWORK_CONFIG": str(tmp_path / "no-formwork.toml"),
            "FORMWORK_MAX_ATTEMPTS": "1",
            "FORMWORK_RUN_LEASE_S": "2",  # the killed run's claims are free 2 s after its last heartbeat
            "PREFECT_HOME": str(tmp_path / "prefect-home"),
            "PREFECT_API_URL": str(PREFECT_API_URL.value()),  # the session's harness: no 35 s start
        }
    )


def _check_killed_then_resumed(tmp_path: Path, db_url: str, engine: dict[str, str]) -> None:
    source = tmp_path / "input.jsonl"
    source.write_text("".join(f'{{"id": "{r["id"]}", "text": "{r["text"]}"}}\n' for r in RECORDS))
    env = _environment(tmp_path, engine)
    formwork = Path(sys.executable).with_name("formwork")
    command = [str(formwork), "run", str(source), "--schema", "chat_tag", "--db", db_url]
    command += ["--chunk-size", "100"]  # one chunk holds every record

    kill_at_first_result(command, env, tmp_path / "first-run.log", lambda: _stored_results(db_url), 420)
    sessions = session_factory(db_url)
    with sessions() as session:
        (first_run,) = session.scalars(select(Run.id)).all()
        done = set(session.scalars(select(Result.record_id).where(Result.run_id == first_run)))
        calls = Counter((c.record_id, c.pass_name) for c in session.scalars(
            select(ModelCall).where(ModelCall.run_id == first_run)))  # fmt: skip
        history = set(session.scalars(select(RunResult.record_id).where(RunResult.run_id == first_run)))
    assert 1 <= len(done) < len(RECORDS), f"not killed in the middle of the chunk: {len(done)} results"
    for record_id in done:  # each finished record's paid work is stored with it
        assert calls[(record_id, "reasoning")] >= 1 and calls[(record_id, "formatting")] >= 1, calls
    # a call answered for a record still in flight may be stored already (issue 54 point 10): the next
    # run takes it; a finished record's calls are all there
    assert {record_id for record_id, _ in calls} >= done
    assert history == done

    time.sleep(2.5)  # past the run lease: the killed run is dead, its claims stale
    second = subprocess.run(command, cwd=vf.REPO, env=env, capture_output=True, text=True, timeout=600,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    assert second.returncode == expected_exit(second.stdout + second.stderr), second.stdout + second.stderr

    with sessions() as session:
        runs = list(session.scalars(select(Run).order_by(Run.id)))
        records = {r.id for r in session.scalars(select(Record))}
        results = {r.record_id: r for r in session.scalars(select(Result))}
        resumed_calls = {c.record_id for c in session.scalars(
            select(ModelCall).where(ModelCall.run_id == runs[-1].id))}  # fmt: skip
        claims = session.scalar(select(RecordClaim.record_id).limit(1))
        queued = {e.record_id for e in session.scalars(select(RetryEntry))}
    assert [r.state for r in runs] == ["crashed", "finished"]
    assert set(results) == records and len(records) == len(RECORDS)
    assert {i for i, r in results.items() if r.run_id == first_run} == done  # the killed run's work stays
    assert resumed_calls <= records - done  # the next run processed only the rest
    with sessions() as session:
        paid = Counter((c.record_id, c.pass_name) for c in session.scalars(select(ModelCall)))
    assert all(paid[(record, step)] >= 1 for record in records for step in ("reasoning", "formatting")), paid
    assert claims is None  # every claim released with its result
    assert queued == {i for i, r in results.items() if r.status == "failed"}


@pytest.mark.slow
def test_a_killed_embedded_run_keeps_every_finished_record(prefect_harness, any_db_url, tmp_path) -> None:
    engine = {"FORMWORK_ENGINE": "local", "FORMWORK_REASONING_MAX_TOKENS": "32", "FORMWORK_LOCAL_SLOTS": "1"}
    _check_killed_then_resumed(tmp_path, any_db_url, engine)


@pytest.mark.slow
@pytest.mark.vllm
def test_a_killed_vllm_run_keeps_every_finished_record(
    prefect_harness, vllm_server, any_db_url, tmp_path
) -> None:
    engine = {"FORMWORK_ENGINE": "vllm", "FORMWORK_VLLM_URL": vllm_server.base_url,
              "FORMWORK_VLLM_MODEL": vllm_server.model, "FORMWORK_VLLM_MAX_CONCURRENCY": "1",
              "FORMWORK_REASONING_MAX_TOKENS": "16", "FORMWORK_FORMAT_MAX_TOKENS": "48"}  # fmt: skip
    _check_killed_then_resumed(tmp_path, any_db_url, engine)


def _outcome(record_id: int, status: str = "ok") -> Outcome:
    return Outcome(record_id, Verdict(status, {"emotion": "happy"} if status == "ok" else None, []), 1)


def test_the_writer_stores_each_record_within_its_window_not_at_the_end(db_url: str) -> None:
    schema = load_checked_schema("chat_tag")
    sessions = session_factory(db_url)
    with sessions() as session:
        ids = store_records(session, "hand", [InputRecord(f"k{i}", f"text {i}") for i in range(3)])
        run_id = start_run(session, schema, flow="test", source="hand", engine="hand", reasoning_model="m",
                           formatting_model="m")  # fmt: skip
    groups: list[list[int]] = []

    def save(outcomes: Any) -> None:
        groups.append([o.record_id for o in outcomes])
        save_chunk(sessions, run_id, schema, outcomes, QueuePolicy(), OutageWindow(10))

    with RecordWriter(save, window_s=0.2) as writer:
        writer.put(_outcome(ids[0]))
        writer.put(_outcome(ids[1], "failed"))
        deadline = time.monotonic() + 5
        while len(_stored_results(db_url)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        stored_while_open = set(_stored_results(db_url))
        writer.put(_outcome(ids[2]))
    assert stored_while_open == {ids[0], ids[1]}  # written while the chunk was still open
    assert groups == [[ids[0], ids[1]], [ids[2]]]  # one transaction per window, not per record
    with sessions() as session:
        assert set(session.scalars(select(RetryEntry.record_id))) == {ids[1]}
        assert set(session.scalars(select(Result.record_id))) == set(ids)


def test_a_write_that_fails_fails_the_chunk_after_the_others_are_written() -> None:
    written: list[int] = []

    def save(outcomes: Any) -> None:
        if outcomes[0].record_id == 1:
            raise RuntimeError("database gone")
        written.extend(o.record_id for o in outcomes)

    writer = RecordWriter(save, window_s=0.0)
    for record_id in (1, 2):
        writer.put(_outcome(record_id))
        time.sleep(0.05)
    with pytest.raises(RuntimeError, match="database gone"):
        writer.close()
    assert written == [2]
