"""Every answered model call is stored at once, and a rerun takes it instead of paying again (issue 54, 10).

A long list read item by item makes one call per unit, over minutes; a run killed among them lost every
answered one (32 of 61 made, none stored, 93 paid after the rerun), and the first of two readings went
the same way. A real `formwork run` on the bundled model is SIGKILLed once some of a record's calls are
in the database and its result is not: the calls answered before the kill are there, and the next
run makes fewer calls for the record, taking the stored answers. Beside it, the keeper's own promise
on a real SQLite database: a stored answer comes back whole (the log-probabilities the judge reads
with it), is taken once, and is dropped once its record's result is stored.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from formwork.db.keeping import OutageWindow
from formwork.db.models import ModelCall, Result, Run
from formwork.db.session import session_factory
from formwork.db.store import start_run, store_records
from formwork.db.writer import EarlyCalls
from formwork.schemas.registry import load_checked_schema
from formwork.tasks.calls import CallLog, Outcome
from formwork.tasks.engines.base import Completion
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict
from tests import vllm_fixture as vf
from tests.killing import kill_at_first_result

LONG_GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold" / "long"
LINES = [f"2024-05-{d:02d}  Cafe Bellecour {d}  {d + 0.5:.2f} EUR" for d in range(1, 11)]
STATEMENT = "\n".join(["Card statement, May 2024. Card holder: Marie Dubois", *LINES, "Total: 60.00 EUR"])


def _run(session: Any) -> int:
    schema = load_checked_schema("chat_tag")
    return start_run(session, schema, flow="test", source="hand", engine="local", reasoning_model="m",
                     formatting_model="m")  # fmt: skip


def _log() -> CallLog:
    return CallLog("formatting", 1, "m", "h", 64, "error")


def test_an_answered_call_is_stored_at_once_and_taken_back_once_whole(db_url: str) -> None:
    sessions = session_factory(db_url)
    with sessions() as session:
        (record,) = store_records(session, "hand", [InputRecord("k", "text")])
        killed, rerun = _run(session), _run(session)
    pieces = (('{"a": ', -0.1), ("1}", -0.2))
    answer = Completion('{"a": 1}', "stop", 10, 4, 0.5, "m", pieces, (-math.inf, -3.0))
    log = _log()
    log.finish_reason, log.output = "stop", answer.text
    early = EarlyCalls(sessions, killed, OutageWindow(10), window_s=0.1)
    early.keep(record, "key-1", log, answer)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not _calls(db_url):
        time.sleep(0.02)
    assert len(_calls(db_url)) == 1, "stored while the record is still being read"
    early.close()  # the run dies here: its record's result is never stored

    again = EarlyCalls(sessions, rerun, OutageWindow(10), window_s=0.1)
    with sessions() as session:
        again.load(session, [record])
    first, second = _log(), _log()
    assert again.reuse(record, "key-2", first) is None, "another request's answer is never taken"
    taken = again.reuse(record, "key-1", first)
    assert taken == answer, "the answer comes back whole, with what the judge reads its confidence from"
    assert again.reuse(record, "key-1", second) is None, "taken once"
    first.judged = {"unit": {"index": 1}}
    outcome = Outcome(record, Verdict("ok", {}), 1, calls=[first, second])
    left, settled = again.taken([outcome])
    assert left[0].calls == [second], "a stored call is not stored again with its record"
    again.settle(settled)
    again.close()
    with sessions() as session:
        (row,) = session.scalars(select(ModelCall)).all()
    assert row.run_id == killed and row.judged == {"unit": {"index": 1}}, "settled: no answer kept to take"


def _calls(db_url: str) -> list[tuple[int, Any]]:
    """(run, judged) of every stored call, read on a plain connection (never migrates, never locks)."""
    engine = create_engine(db_url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return list(connection.execute(text("SELECT run_id, judged FROM model_calls")).all())
    except SQLAlchemyError:  # not migrated yet, or briefly locked
        return []
    finally:
        engine.dispose()


def _results(db_url: str) -> int:
    engine = create_engine(db_url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return len(connection.execute(text("SELECT id FROM results")).all())
    except SQLAlchemyError:
        return 0
    finally:
        engine.dispose()


def _environment(tmp_path: Path, extra: dict[str, str]) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    env = {key: value for key, value in os.environ.items() if not key.startswith("FORMWORK_")}
    return env | {
        "FORMWORK_CONFIG": str(tmp_path / "no-formwork.toml"), "FORMWORK_ENGINE": "local",
        "FORMWORK_LOCAL_SLOTS": "1", "FORMWORK_MAX_ATTEMPTS": "1", "FORMWORK_REASONING_MAX_TOKENS": "32",
        "FORMWORK_RUN_LEASE_S": "2", "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
    } | extra  # fmt: skip


def _killed_then_rerun(tmp_path: Path, db_url: str, row: dict[str, str], schema: str,
                       extra: dict[str, str], enough: int) -> tuple[int, int, list[Any]]:  # fmt: skip
    """Kill a run once `enough` calls are stored and no result; rerun; return the calls the killed run
    stored, the calls the rerun made, and every stored call's `judged` by run."""
    import json

    source = tmp_path / "input.jsonl"
    source.write_text(json.dumps(row) + "\n")
    env = _environment(tmp_path, extra)
    formwork = Path(sys.executable).with_name("formwork")
    command = [str(formwork), "run", str(source), "--schema", schema, "--db", db_url]

    def answered() -> bool:
        return len(_calls(db_url)) >= enough and not _results(db_url)

    kill_at_first_result(command, env, tmp_path / "killed.log", answered, 420)
    assert _results(db_url) == 0, "killed before the record was stored"
    before = _calls(db_url)
    time.sleep(2.5)  # past the run lease
    second = subprocess.run(command, cwd=vf.REPO, env=env, capture_output=True, text=True, timeout=600,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    assert second.returncode in (0, 4), second.stdout + second.stderr
    with session_factory(db_url)() as session:
        runs = list(session.scalars(select(Run.id).order_by(Run.id)))
        calls = list(session.execute(select(ModelCall.run_id, ModelCall.judged).order_by(ModelCall.id)))
        assert session.scalars(select(Result.run_id)).all() == [runs[-1]]
    made = sum(1 for run, _ in calls if run == runs[-1])
    return len(before), made, calls


@pytest.mark.slow
def test_a_list_killed_mid_way_keeps_its_answered_unit_calls(prefect_harness, db_url, tmp_path) -> None:
    row = {"id": "statement", "text": STATEMENT}
    schema = str(LONG_GOLD / "statement.schema.json")
    stored, made, calls = _killed_then_rerun(tmp_path, db_url, row, schema, {}, enough=3)
    assert stored >= 3, "the unit calls answered before the kill are in the database"
    units = {c["unit"]["index"] for _, c in calls if "unit" in (c or {})}
    assert units == set(range(1, 11)), "every unit read once, by one run or the other"
    assert made <= 11 - stored, "the rerun pays only for what the killed run had not answered"
    assert not any("answer" in (c or {}) for _, c in calls), "each taken answer settled with the result"


@pytest.mark.slow
def test_the_first_of_two_readings_survives_a_kill(prefect_harness, db_url, tmp_path) -> None:
    row = {"id": "r0", "text": "Anna: we won the finals!!!"}
    extra = {"FORMWORK_MODE": "two-readings", "FORMWORK_REASONING_MAX_TOKENS": "128"}  # time to kill it
    stored, made, calls = _killed_then_rerun(tmp_path, db_url, row, "chat_tag", extra, enough=1)
    runs = sorted({run for run, _ in calls})
    notes_free = [run for run, c in calls if (c or {}).get("reading") == "notes-free"]
    assert stored >= 1 and notes_free == [runs[0]], "the killed run's first reading is stored and taken"
    assert made >= 1, "the rerun made the second reading"
