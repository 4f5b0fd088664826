"""`formwork review` and the run's review page read through the reader, never the write lock.

Issue 20 point 17: both opened the writing session (SQLite `BEGIN IMMEDIATE`), so while a run was
writing they waited for the lock (and failed with "database is locked" after the busy timeout).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from typer.testing import CliRunner

from formwork.db.session import session_factory
from formwork.db.store import start_run
from formwork.flows.artifacts import write_review
from formwork.flows.cli import app


def test_review_reads_while_another_process_holds_the_write_lock(db_url: str, tmp_path: Path) -> None:
    sessions = session_factory(db_url)
    with sessions() as session:
        run_id = start_run(session, flow="batch_extract", source="in.jsonl", schema_name="expense",
                           schema_version=1, engine="local", reasoning_model="m",
                           formatting_model="m")  # fmt: skip
    writer = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a run in the middle of storing a chunk
    try:
        started = time.monotonic()
        result = CliRunner().invoke(app, ["review", "--db", db_url, "--run", str(run_id),
                                          "--out", str(tmp_path / "page.html")])  # fmt: skip
        assert result.exit_code == 0, result.output
        page = write_review(sessions, run_id, tmp_path / "reviews")
        assert time.monotonic() - started < 10  # the busy timeout is 30 s
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert f"formwork run {run_id}" in (tmp_path / "page.html").read_text() and page.is_file()
