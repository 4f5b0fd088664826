"""A database that goes away in the middle of a run (issue 41 point 3): a real PostgreSQL server of the
test's own, stopped and started again under a real run on the bundled model.

Before, a PostgreSQL restart of 15 s lost 3 finished records and their 4 paid calls (the write gave up
after three tries), the next run paid for them again, and the run ended in a raw "Connection refused"
traceback. Pinned here, judged from the database:
- back within the outage window (`db_outage_s`), the run waits for it and finishes; every record has
  its result and exactly its own two calls: none lost, none stored twice;
- away for longer, the run stops with a message that names the journal, no traceback; the next run
  stores the journal before it calls any model (no journalled record is extracted again), then does
  only the rest.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import select
from sqlalchemy.engine.url import make_url
from typer.testing import CliRunner

from formwork.db.models import ModelCall, Record, Result, Run
from formwork.db.session import session_factory
from formwork.flows.batch_extract import batch_extract
from formwork.flows.cli import app
from formwork.tasks.settings import Settings
from tests.killing import RECORDS as ALL_RECORDS
from tests.run_exit import expected_exit

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
RECORDS = ALL_RECORDS[:4]  # the embedded engine's four slots: all in flight when the server stops


def _settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: object) -> None:
    """The bundled model, short passes, one attempt; no FORMWORK_* setting from outside; then `env`."""
    for name in Settings.model_fields:
        monkeypatch.delenv(f"FORMWORK_{name.upper()}", raising=False)
    fixed = {"CONFIG": tmp_path / "no-formwork.toml", "ENGINE": "local", "REASONING_MAX_TOKENS": 16,
             "MAX_ATTEMPTS": 1, **env}  # fmt: skip
    for name, value in fixed.items():
        monkeypatch.setenv(f"FORMWORK_{name}", str(value))


def _results(url: str) -> int:
    """How many results the database holds, on a plain connection of its own (0 while it is down)."""
    parsed = make_url(url)
    try:
        with psycopg.connect(host=parsed.host, port=parsed.port, user=parsed.username, dbname=parsed.database,
                             connect_timeout=2) as connection:  # fmt: skip
            return connection.execute("SELECT count(*) FROM results").fetchone()[0]
    except psycopg.Error:  # not migrated yet, or down
        return 0


class Said(logging.Handler):
    """What the outage window told the operator."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _stop_at_first_result(server, down_s: float | None) -> tuple[threading.Thread, dict[str, float]]:
    """A thread that stops the server as soon as a result is stored, and starts it `down_s` later (None:
    the test starts it)."""
    when: dict[str, float] = {}

    def restart() -> None:
        deadline = time.monotonic() + 300
        while not _results(server.url) and time.monotonic() < deadline:
            time.sleep(0.05)
        server.stop()
        when["stopped"] = time.monotonic()
        if down_s is not None:
            time.sleep(down_s)
            server.start()
            when["started"] = time.monotonic()

    thread = threading.Thread(target=restart, name="restarter", daemon=True)
    thread.start()
    return thread, when


def _calls_per_record(url: str) -> tuple[dict[int, Counter], dict[int, int], list[Run]]:
    with session_factory(url)() as session:
        records = list(session.scalars(select(Record.id)))
        calls = {record: Counter() for record in records}
        for call in session.scalars(select(ModelCall)):
            calls[call.record_id][(call.run_id, call.pass_name)] += 1
        results = {r.record_id: r.run_id for r in session.scalars(select(Result))}
        runs = list(session.scalars(select(Run).order_by(Run.id)))
    return calls, results, runs


def test_a_postgres_restart_under_a_run_loses_no_finished_record_and_repeats_no_call(
    prefect_harness, local_engine, own_postgres, monkeypatch, tmp_path, write_jsonl
) -> None:
    _settings(monkeypatch, tmp_path, DB_OUTAGE_S=120)
    said = Said()
    monkeypatch.setattr(logging.getLogger("formwork.db.keeping"), "handlers", [said])
    restarter, when = _stop_at_first_result(own_postgres, down_s=6)
    summary = batch_extract(str(write_jsonl(RECORDS)), "chat_tag", db_url=own_postgres.url, chunk_size=2)
    restarter.join(timeout=60)

    assert "started" in when, "the server was not restarted under the run"
    assert summary.state == "finished" and summary.records == len(RECORDS), summary
    calls, results, runs = _calls_per_record(own_postgres.url)
    run = summary.run_id
    assert [r.state for r in runs] == ["finished"]
    assert set(results) == set(calls) and len(calls) == len(RECORDS)  # every record has its result
    for record, passes in calls.items():  # its two paid calls, neither lost nor stored twice
        assert passes == Counter({(run, "reasoning"): 1, (run, "formatting"): 1}), (record, passes)
    assert any("could not be reached" in line for line in said.lines), said.lines  # a write waited
    assert any("is back after" in line for line in said.lines), said.lines


def test_a_database_away_past_the_window_journals_and_the_next_run_stores_the_journal_first(
    prefect_harness, local_engine, own_postgres, monkeypatch, tmp_path, write_jsonl
) -> None:
    journal = tmp_path / "journal"
    _settings(monkeypatch, tmp_path, DB_OUTAGE_S=1, JOURNAL_DIR=journal, RUN_LEASE_S=2)
    command = ["run", str(write_jsonl(RECORDS)), "--schema", "chat_tag", "--db", own_postgres.url,
               "--chunk-size", "2"]  # fmt: skip
    stopper, when = _stop_at_first_result(own_postgres, down_s=None)
    first = CliRunner().invoke(app, command)
    stopper.join(timeout=60)
    assert "stopped" in when, "the server was not stopped under the run"
    own_postgres.start()

    (kept,) = journal.glob("*-run-*.jsonl")
    lines = [json.loads(line) for line in kept.read_text().splitlines()[1:]]
    journalled, paid = {line["record_id"] for line in lines}, sum(len(line["calls"]) for line in lines)
    assert journalled, "no record finished while the database was away"
    said = " ".join(first.output.split())  # the console wraps long lines
    assert first.exit_code == 1, first.output
    assert "Traceback" not in said, first.output
    assert "could not be reached for more than 1 s (db_outage_s)" in said, first.output
    assert f"{len(journalled)} finished records ({paid} model calls) are in the journal" in said
    assert "the next run stores them before it calls any model" in said, first.output

    second = CliRunner().invoke(app, command)
    assert second.exit_code == expected_exit(second.output), second.output
    table = " ".join(second.output.split())
    assert re.search(rf"records stored from the journal\W+{len(journalled)}\b", table), second.output
    calls, results, runs = _calls_per_record(own_postgres.url)
    first_run = runs[0].id
    assert [r.state for r in runs] == ["crashed", "finished"]
    assert set(results) == set(calls) and len(calls) == len(RECORDS)
    assert {record for record, run in results.items() if run == first_run} >= journalled  # stored as theirs
    for record, passes in calls.items():  # one run's two calls each: none lost, none paid twice
        (run,) = {run for run, _ in passes}
        assert passes == Counter({(run, "reasoning"): 1, (run, "formatting"): 1}), (record, passes)
        if record in journalled:  # stored from the journal, not extracted again
            assert run == first_run, (record, passes)
    assert not list(journal.glob("*.jsonl"))  # the journal, once stored, is gone
