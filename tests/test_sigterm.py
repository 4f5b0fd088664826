"""SIGTERM stops `formwork run` cleanly (issue 54, point 24).

systemd's and Docker's stop send SIGTERM, and Prefect's handler raised it in the main thread, which then
waited for the chunks in flight while their records went on starting (up to 400), and closed the run
`crashed` although all was stored. A real run on the bundled model, its records in one chunk and one
at a time, gets SIGTERM once its first result is stored: it exits soon, 143 with a one-line "stopped"
message, the run is `stopped` with no claim left, it started at most the records in hand, and the
next run takes up the rest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from formwork.db.models import ModelCall, Record, RecordClaim, Result, Run
from formwork.db.session import session_factory
from tests import vllm_fixture as vf
from tests.killing import RECORDS, stop_at_first


def _results(db_url: str) -> int:
    engine = create_engine(db_url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return len(connection.execute(text("SELECT id FROM results")).all())
    except SQLAlchemyError:  # not migrated yet, or briefly locked
        return 0
    finally:
        engine.dispose()


@pytest.mark.slow
def test_sigterm_stops_taking_records_and_the_next_run_resumes(prefect_harness, db_url, tmp_path) -> None:
    from prefect.settings import PREFECT_API_URL

    source = tmp_path / "input.jsonl"
    source.write_text("".join(f'{{"id": "r{i}", "text": "{r["text"]} ({i})"}}\n'
                              for i, r in enumerate(RECORDS)))  # fmt: skip
    env = {key: value for key, value in os.environ.items() if not key.startswith("FORMWORK_")} | {
        "FORMWORK_CONFIG": str(tmp_path / "no-formwork.toml"), "FORMWORK_ENGINE": "local",
        "FORMWORK_LOCAL_SLOTS": "1", "FORMWORK_MAX_ATTEMPTS": "1", "FORMWORK_REASONING_MAX_TOKENS": "32",
        "FORMWORK_RUN_LEASE_S": "2", "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
    }  # fmt: skip
    formwork = Path(sys.executable).with_name("formwork")
    command = [str(formwork), "run", str(source), "--schema", "chat_tag", "--db", db_url]
    command += ["--chunk-size", "100"]  # one chunk holds every record

    log = tmp_path / "stopped.log"
    code, took = stop_at_first(command, env, log, lambda: _results(db_url), 420, stop_within_s=60)
    said = log.read_text()
    assert code == 143, said
    assert "stopped by SIGTERM" in said and "Traceback" not in said, said
    sessions = session_factory(db_url)
    with sessions() as session:
        (run,) = session.scalars(select(Run)).all()
        done = set(session.scalars(select(Result.record_id)))
        paid = set(session.scalars(select(ModelCall.record_id)))
        claims = session.scalars(select(RecordClaim.record_id)).all()
        total = len(session.scalars(select(Record.id)).all())
    assert run.state == "stopped", "stopped, not crashed"
    assert claims == [], "the records it had not begun are released at once"
    assert paid == done, "every record it began was finished and stored"
    assert 1 <= len(done) <= 3 < total, f"{len(done)} of {total}: it kept taking records ({took:.0f} s)"

    time.sleep(2.5)
    second = subprocess.run(command, cwd=vf.REPO, env=env, capture_output=True, text=True, timeout=600,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    assert second.returncode in (0, 4), second.stdout + second.stderr
    with sessions() as session:
        runs = list(session.scalars(select(Run).order_by(Run.id)))
        results = set(session.scalars(select(Result.record_id)))
        resumed = set(session.scalars(select(ModelCall.record_id).where(ModelCall.run_id == runs[-1].id)))
    assert [r.state for r in runs] == ["stopped", "finished"]
    assert len(results) == total and resumed == results - done, "the next run took up only the rest"
