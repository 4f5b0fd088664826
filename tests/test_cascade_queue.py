"""Issue 54, the cascade's queue: an escalation stays one when the stronger reader cannot read it; a
killed `formwork retry` leaves nothing claimed for the next; a reader that cannot be opened gives its
claims back in one line; `--escalate now` reads its own run's rows; an entry names its reader whole and
holds no password; an entry whose text changed is settled stale, not read again."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from formwork.db.models import RecordClaim, RetryEntry, Run, RunResult
from formwork.db.queue import list_entries
from formwork.db.queue_claims import claim_due
from formwork.db.queue_failures import record_failure
from formwork.db.session import session_factory
from formwork.db.store import start_run, store_records
from formwork.flows.cli import app
from formwork.flows.run_policy import reader_settings, stored_reader
from formwork.schemas.registry import load_schema
from formwork.tasks.settings import Settings
from formwork.tasks.sources import InputRecord

EXPENSE = load_schema("expense")
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
SERVER = "vllm:http://ops:s3cret-pw@127.0.0.1:9/v1#big"  # port 9 (discard): nothing answers there
runner = CliRunner()


@pytest.fixture
def session(any_db_url: str) -> Iterator[Session]:
    with session_factory(any_db_url)() as session:
        yield session


def _records(session: Session, texts: dict[str, str], source: str = "q.jsonl") -> list[int]:
    return store_records(session, source, [InputRecord(key, text) for key, text in texts.items()])


def _escalation(session: Session, record_id: int, stronger: str, now: datetime = T0) -> RetryEntry:
    entry = record_failure(
        session, record_id, EXPENSE, "unsure", now=now, kind="escalation", escalate_to=stronger
    )
    session.commit()
    return entry


def test_an_escalation_the_stronger_reader_cannot_read_stays_an_escalation_and_backs_off(
    session: Session,
) -> None:
    """Point 2: the escalation's run records a failed row (engine error, or a row it fails) as a retry;
    the entry must still wait for the stronger reader, later, not for the first reader again."""
    [record] = _records(session, {"a": "Taxi 35 EUR"})
    _escalation(session, record, "qwen2.5-coder-1.5b@one-pass")
    claim_due(session, "w:1", 1, now=T0)
    record_failure(session, record, EXPENSE, "engine error: server went away", now=T0)  # what store writes
    session.commit()
    [entry] = list_entries(session)
    assert (entry.kind, entry.escalate_to, entry.state) == (
        "escalation",
        "qwen2.5-coder-1.5b@one-pass",
        "waiting",
    )
    assert entry.attempts == 2
    due = entry.next_attempt_at if entry.next_attempt_at.tzinfo else entry.next_attempt_at.replace(tzinfo=UTC)
    assert due > T0  # backed off: not claimable at once
    assert claim_due(session, "w:2", 1, now=T0) == []


def test_a_new_escalation_after_retries_names_its_reader(session: Session) -> None:
    """A retry that comes back unsure becomes an escalation (the other direction is not preserved)."""
    [record] = _records(session, {"a": "Taxi 35 EUR"})
    record_failure(session, record, EXPENSE, "failed", now=T0)
    _escalation(session, record, "qwen2.5-coder-1.5b@one-pass")
    [entry] = list_entries(session)
    assert (entry.kind, entry.escalate_to) == ("escalation", "qwen2.5-coder-1.5b@one-pass")


def test_escalate_now_claims_only_the_runs_own_rows(session: Session) -> None:
    """Point 5: `run B --escalate now` took the oldest waiting escalations of any run, not B's."""
    older, mine = _records(session, {"a": "Taxi 35 EUR", "b": "Lunch 12 USD"})
    runs = [start_run(session, EXPENSE, flow="batch_extract", source="q.jsonl", engine="local",
                      reasoning_model="m", formatting_model="m") for _ in range(2)]  # fmt: skip
    session.add_all([RunResult(run_id=run, record_id=record, status="partial")
                     for run, record in zip(runs, (older, mine), strict=True)])  # fmt: skip
    session.commit()
    _escalation(session, older, "big", now=T0 - timedelta(hours=1))  # the oldest: first for anyone
    _escalation(session, mine, "big")
    claims = claim_due(session, "w:1", 1, now=T0, kind="escalation", run_id=runs[1])
    assert [c.record_id for c in claims] == [mine]


def test_an_entry_names_the_reader_whole() -> None:
    """Point 7: `@two-readings` was stored bare, so a worker with another model read it with that one."""
    assert stored_reader("@two-readings", Settings()) == "smollm2-135m@two-readings"
    qwen = Settings(local_model="qwen2.5-coder-1.5b", mode="one-pass")
    assert stored_reader("@two-readings", qwen) == "qwen2.5-coder-1.5b@two-readings"
    assert stored_reader("qwen2.5-coder-1.5b", Settings(mode="one-pass")) == "qwen2.5-coder-1.5b@one-pass"
    other_worker = Settings(local_model="qwen2.5-coder-1.5b")
    reading = reader_settings(other_worker, "smollm2-135m@two-readings")
    assert (reading.local_model, reading.mode) == ("smollm2-135m", "two-readings")


def test_a_server_password_is_never_stored_and_is_taken_from_the_workers_settings() -> None:
    """Point 21: the escalation server's password was stored in clear in the queue."""
    stored = stored_reader(SERVER, Settings())
    assert "s3cret-pw" not in stored and stored.startswith("vllm:http://ops:***@127.0.0.1:9/v1")
    own = reader_settings(Settings(escalate_to=SERVER), stored)  # the worker holds the secret
    assert own.vllm_url == "http://ops:s3cret-pw@127.0.0.1:9/v1" and own.vllm_model == "big"
    stranger = reader_settings(Settings(), stored)  # never sends *** as a password
    assert stranger.vllm_url == "http://127.0.0.1:9/v1"


def test_queue_never_prints_a_stored_password(db_url: str) -> None:
    """Point 21: an entry stored in clear by an older version is shown redacted."""
    with session_factory(db_url)() as session:
        [record] = _records(session, {"a": "Taxi 35 EUR"})
        _escalation(session, record, SERVER)
    shown = runner.invoke(app, ["queue", "--db", db_url], env={"COLUMNS": "300"})  # one line a row
    assert shown.exit_code == 0, shown.output
    assert "s3cret-pw" not in shown.output and "escalation" in shown.output


def _gone_pid() -> int:
    """The pid of a process of this host that has ended (what `kill -9` leaves)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_retry_after_a_killed_retry_finds_the_dead_workers_entries(
    prefect_harness, db_url: str, monkeypatch
) -> None:
    """Point 3: the next `formwork retry` said "nothing due": the killed worker's claims stood for 30
    minutes and its run stayed `running`. Its process is gone, so both are settled before any claim.
    (The record's text changed since, so the entry is settled without a model: claimed, then stale.)"""
    dead = f"{socket.gethostname()}:{_gone_pid()}"
    with session_factory(db_url)() as session:
        [old] = _records(session, {"a": "Taxi 35 EUR"})
        _escalation(session, old, "smollm2-135m@one-pass", now=datetime.now(UTC) - timedelta(minutes=1))
        assert len(claim_due(session, dead, 5)) == 1
        run = start_run(session, EXPENSE, flow="reprocess_failed", source="expense.json", engine="local",
                        reasoning_model="m", formatting_model="m", worker=dead)  # fmt: skip
        session.add(RecordClaim(record_id=old, schema_name="expense", schema_version=EXPENSE.version,
                                run_id=run, claimed_at=datetime.now(UTC)))  # fmt: skip
        session.commit()
        _records(session, {"a": "Taxi 36 EUR"})  # the text changed meanwhile
    result = runner.invoke(app, ["retry", "--db", db_url])
    assert result.exit_code == 0, result.output
    with session_factory(db_url)() as session:
        [entry] = list_entries(session)
        state = session.scalar(select(Run.state).where(Run.id == run))
        left = session.scalars(select(RecordClaim)).all()
    assert state == "crashed" and not left
    assert entry.state == "stale"


def test_an_escalation_whose_text_changed_is_settled_stale_not_read(prefect_harness, db_url: str) -> None:
    """Point 8: the stronger reader was paid for a text the source no longer has. Settled without any
    reader opened: the entry names a server nobody runs, which would fail the retry if it were read."""
    with session_factory(db_url)() as session:
        [old] = _records(session, {"a": "Taxi 35 EUR"})
        _escalation(session, old, SERVER, now=datetime.now(UTC) - timedelta(minutes=1))
        [new] = _records(session, {"a": "Taxi 36 EUR"})
    result = runner.invoke(app, ["retry", "--db", db_url])
    assert result.exit_code == 0, result.output
    with session_factory(db_url)() as session:
        [entry] = list_entries(session)
    assert entry.state == "stale" and f"record {new}" in entry.last_error and entry.claimed_by is None


def test_a_reader_that_cannot_be_opened_gives_the_claims_back_in_one_line(
    prefect_harness, db_url: str
) -> None:
    """Point 4: a server that is down ended `formwork retry` in a traceback, its claims left to no run."""
    with session_factory(db_url)() as session:
        [record] = _records(session, {"a": "Taxi 35 EUR"})
        _escalation(session, record, SERVER, now=datetime.now(UTC) - timedelta(minutes=1))
    result = runner.invoke(app, ["retry", "--db", db_url], env={"COLUMNS": "300"})
    # explained, not raised (CliRunner's output may also hold Prefect's `Logging error` for the stream an
    # earlier invocation closed; the real command prints the error line and Prefect's one line)
    assert isinstance(result.exception, SystemExit) and result.exit_code != 0, result.exception
    said = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(said) == 1 and "cannot be opened" in said[0] and "waiting again" in said[0], result.output
    assert "s3cret-pw" not in said[0]
    with session_factory(db_url)() as session:
        [entry] = list_entries(session)
    assert (entry.state, entry.claimed_by, entry.kind) == ("waiting", None, "escalation")


def test_an_older_entrys_password_is_redacted_by_the_upgrade(db_url: str) -> None:
    """Point 21: entries an older version queued held the password in clear; the upgrade redacts them."""
    from alembic import command
    from sqlalchemy import create_engine, text

    from formwork.db.session import alembic_config, get_engine

    engine = create_engine(db_url)
    with engine.begin() as connection:
        config = alembic_config(db_url)
        config.attributes["connection"] = connection
        command.upgrade(config, "0013_escalation")
        connection.execute(text("INSERT INTO records (id, source, key, text_hash, text, meta, created_at) "
                                "VALUES (1, 'a', '1', 'h', 't', '{}', '2030-01-01')"))  # fmt: skip
        connection.execute(
            text("INSERT INTO retry_queue (id, record_id, schema_name, schema_version, schema_source, "
                 "schema_hash, attempts, last_error, next_attempt_at, state, kind, escalate_to, updated_at) "
                 "VALUES (1, 1, 'expense', 1, 'e', '', 1, '', '2030-01-01', 'waiting', 'escalation', :to, "
                 "'2030-01-01')"),
            {"to": SERVER},
        )  # fmt: skip
    engine.dispose()
    with get_engine(db_url).connect() as connection:  # what every command does first: migrate to head
        stored = connection.scalar(text("SELECT escalate_to FROM retry_queue"))
    assert stored == stored_reader(SERVER, Settings())


def test_the_stored_reader_keys_the_same_calibration_as_the_spec_it_came_from(local_engine) -> None:
    """Point 7: naming the reader whole changes which reader reads, never which calibration the run
    expects of it (the fields a row may escalate for)."""
    from formwork.tasks.evaluation.key import escalation_key

    small = (local_engine, local_engine)
    for spec in ("@two-readings", "smollm2-135m"):
        whole = stored_reader(spec, Settings())
        assert escalation_key(Settings(escalate_to=whole), EXPENSE, small) == escalation_key(
            Settings(escalate_to=spec), EXPENSE, small
        )


def test_queue_shows_an_errors_control_characters_escaped_and_never_as_markup(db_url: str) -> None:
    """Point 19's twin: a queue entry's last error holds what a record or a model wrote; `formwork queue`
    printed it raw (ESC sequences retitle the terminal) and rich read `[red]` in it as markup."""
    with session_factory(db_url)() as session:
        [record] = _records(session, {"a": "Taxi 35 EUR"})
        record_failure(session, record, EXPENSE, "who \x1b]0;owned\x07 is [red]odd[/red]", now=T0)
        session.commit()
    shown = runner.invoke(app, ["queue", "--db", db_url], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    assert "\x1b" not in shown.output and "\\x1b]0;owned\\x07" in shown.output
    assert "[red]odd[/red]" in shown.output
