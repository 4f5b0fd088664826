"""The production deployment, for real: a Prefect server on PostgreSQL, a process work pool, the
deployments of deploy/prefect.yaml, two workers, and the flows triggered through the server's API.

What it pins is the scale-out promise, checked in Formwork's PostgreSQL database afterwards: two
`batch_extract` runs started at once on the same records (one per worker) store one result per record
and never call the model twice for the same record, pass and attempt; `reprocess_failed` then drains
the retry queue once. Production parameters (the /data/inbox paths) are overridden per flow run, so
deploy/prefect.yaml stays the production truth.

Every process is started in its own session and stopped with SIGTERM (background Prefect servers and
workers ignore SIGINT), then SIGKILL, whatever the test's outcome. The Prefect server's database is on
the test PostgreSQL through asyncpg.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy import func, select, update
from sqlalchemy.engine.url import make_url

from formwork.db.models import ModelCall, Record, Result, RetryEntry, Run
from formwork.db.session import session_factory

ROOT = Path(__file__).resolve().parents[1]
PREFECT = str(Path(sys.executable).with_name("prefect"))
TEXTS = ["Taxi 35 EUR to the airport, Tom", "Lunch 12.50 USD with a client", "Hotel 240 GBP, two nights",
         "Train ticket 48 CHF"]  # fmt: skip
pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Processes:
    """Background processes of this test, each in its own session so its children stop with it."""

    def __init__(self, logs: Path) -> None:
        self.logs, self.started = logs, []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = (self.logs / f"{name}.log").open("wb")
        process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
        self.started.append((name, process))
        return process

    def stop_all(self) -> None:
        for _, process in reversed(self.started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for _, process in self.started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)

    def tail(self) -> str:
        return "\n".join(f"--- {name}:\n{(self.logs / f'{name}.log').read_text()[-3000:]}" for name, _ in
                         self.started)  # fmt: skip


@pytest.fixture
def prefect_database(postgres_url: str) -> Iterator[str]:
    """A new PostgreSQL database for the Prefect server, as an asyncpg URL; dropped afterwards."""
    server = make_url(postgres_url)
    name = f"prefect_{uuid.uuid4().hex[:8]}"
    admin = dict(host=server.host, port=server.port, user=server.username, password=server.password,
                 dbname="postgres", autocommit=True)  # fmt: skip
    with psycopg.connect(**admin) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server.set(drivername="postgresql+asyncpg", database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(**admin) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _wait(what: str, check, timeout: float, processes: Processes):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(1)
    pytest.fail(f"{what}: not within {timeout:.0f} s\n{processes.tail()}")


def _cli(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run([PREFECT, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"prefect {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_two_workers_share_a_batch_and_drain_the_queue_without_repeating_a_call(
    postgres_db_url, prefect_database, tmp_path
) -> None:
    processes = Processes(tmp_path)
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "FORMWORK_"))}
    common = {**base, "PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_LOGGING_LEVEL": "INFO",
              "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}  # fmt: skip
    server_env = {**common, "PREFECT_API_DATABASE_CONNECTION_URL": prefect_database}
    client_env = {**common, "PREFECT_API_URL": api, "PREFECT_SERVER_EPHEMERAL_ENABLED": "false"}
    worker_env = {
        **client_env,
        "FORMWORK_HOME": str(ROOT),
        "FORMWORK_DB_URL": postgres_db_url,
        "FORMWORK_ENGINE": "local",
        "FORMWORK_LOCAL_THREADS": "1",
        "FORMWORK_REASONING_MAX_TOKENS": "16",
        "FORMWORK_MAX_ATTEMPTS": "1",
        "FORMWORK_FORMAT_MAX_TOKENS": "3",
    }  # fmt: skip  (3 tokens: every record fails, queued)
    source = tmp_path / "expenses.jsonl"
    source.write_text("".join(json.dumps({"id": f"e{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    try:
        processes.start("server", [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port),
                                   "--no-ui"], server_env)  # fmt: skip
        _wait("the Prefect server answers /health", lambda: _healthy(api), 240, processes)
        _cli(["work-pool", "create", "formwork", "--type", "process"], client_env)
        _cli(["--no-prompt", "deploy", "--all", "--prefect-file", "deploy/prefect.yaml"], worker_env)
        for name in ("worker-1", "worker-2"):  # one flow run at a time each: two runs need both workers
            processes.start(name, [PREFECT, "worker", "start", "--pool", "formwork", "--limit", "1",
                                   "--name", name], worker_env)  # fmt: skip
        batch = [_trigger(api, "batch_extract/ingest-expenses", {"source": str(source)}) for _ in range(2)]
        states = [_wait(f"flow run {r}", lambda r=r: _final(api, r), 420, processes) for r in batch]
        assert states == ["COMPLETED", "COMPLETED"], processes.tail()
        with session_factory(postgres_db_url)() as session:  # the backoff has passed: an hour later
            session.execute(update(RetryEntry).values(next_attempt_at=func.now()))
            session.commit()
        retry = _trigger(api, "reprocess_failed/reprocess-failed",
                         {"limit": 50, "overrides": {"format_max_tokens": 4}})  # fmt: skip
        assert _wait("reprocess_failed", lambda: _final(api, retry), 420, processes) == "COMPLETED"
        logs = {name: (tmp_path / f"{name}.log").read_text() for name in ("worker-1", "worker-2")}
        workers = {name for name, log in logs.items() for run_id in batch if run_id in log}
        tail = processes.tail()
    finally:
        processes.stop_all()

    assert all(process.returncode is not None for _, process in processes.started)
    with session_factory(postgres_db_url)() as session:
        records = session.scalars(select(Record.id)).all()
        assert len(records) == len(TEXTS)
        results = session.execute(select(Result.record_id, func.count()).group_by(Result.record_id)).all()
        assert sorted(results) == sorted((r, 1) for r in records)  # one result per record
        calls = session.execute(
            select(Run.flow, ModelCall.record_id, ModelCall.pass_name, ModelCall.attempt, func.count())
            .join(Run, Run.id == ModelCall.run_id)
            .group_by(Run.flow, ModelCall.record_id, ModelCall.pass_name, ModelCall.attempt)
        ).all()  # fmt: skip
        assert calls and max(count for *_, count in calls) == 1, calls
        batch_calls = {(record, name) for flow, record, name, _, _ in calls if flow == "batch_extract"}
        assert batch_calls == {(r, p) for r in records for p in ("reasoning", "formatting")}
        retried = {record for flow, record, *_ in calls if flow == "reprocess_failed"}
        queue = session.execute(select(RetryEntry.record_id, RetryEntry.state, RetryEntry.attempts)).all()
        statuses = session.execute(select(Result.record_id, Result.status, Result.errors)).all()
        assert retried == set(records), (queue, statuses, tail)  # every queued failure reprocessed, once
        runs = session.execute(select(Run.flow, Run.state)).all()
        assert sorted(runs) == [("batch_extract", "finished")] * 2 + [("reprocess_failed", "finished")]
        assert (
            session.scalar(select(func.count()).select_from(RetryEntry).where(RetryEntry.state == "claimed"))
            == 0
        )
    assert len(workers) == 2, f"both workers ran a batch: {workers}"


def _healthy(api: str) -> bool:
    try:
        return httpx.get(f"{api}/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _trigger(api: str, deployment: str, parameters: dict) -> str:
    found = httpx.get(f"{api}/deployments/name/{deployment}", timeout=30)
    found.raise_for_status()
    created = httpx.post(f"{api}/deployments/{found.json()['id']}/create_flow_run",
                         json={"parameters": parameters}, timeout=30)  # fmt: skip
    created.raise_for_status()
    return created.json()["id"]


def _run(api: str, run_id: str) -> dict:
    response = httpx.get(f"{api}/flow_runs/{run_id}", timeout=30)
    response.raise_for_status()
    return response.json()


def _final(api: str, run_id: str) -> str | None:
    state = _run(api, run_id)["state"]
    return (
        state["type"] if state and state["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") else None
    )
