"""Failed records wait in the retry queue and the reprocessing flow drains it, on the real model."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from formwork.db.models import ModelCall, Result, RetryEntry, Run, utcnow
from formwork.db.queue import list_entries, requeue
from formwork.db.session import session_factory
from formwork.flows.batch_extract import batch_extract
from formwork.flows.cli import app
from formwork.flows.reprocess_failed import reprocess_failed

pytestmark = pytest.mark.slow
RECORDS = [
    {"id": "a", "text": "Anna: we won the finals!!!"},
    {"id": "b", "text": "Bob: the deploy failed again"},
    {"id": "c", "text": ""},
]


@pytest.fixture
def failed_run(prefect_harness, local_engine, monkeypatch, write_jsonl, db_url):
    """A run whose formatting budget is too small: every good record fails at `length` and is queued."""
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("FORMWORK_FORMAT_MAX_TOKENS", "3")
    summary = batch_extract(str(write_jsonl(RECORDS)), "chat_tag", db_url=db_url)
    assert summary.statuses == {"failed": 3}
    monkeypatch.delenv("FORMWORK_FORMAT_MAX_TOKENS")
    return session_factory(db_url)


def test_failures_are_queued_but_bad_input_is_not(failed_run) -> None:
    with failed_run() as session:
        entries = list_entries(session)
    assert len(entries) == 2  # the empty text can never succeed: failed, not queued
    assert all(e.state == "waiting" and e.attempts == 1 for e in entries)
    assert all("no JSON came back" in e.last_error and "finish=length" in e.last_error for e in entries)
    assert all(e.schema_source.endswith("chat_tag.json") for e in entries)


def test_nothing_is_claimed_before_its_backoff_is_over(failed_run, db_url) -> None:
    # Full jitter may draw a backoff of a second or less, over before this line runs (a CI flake):
    # put every entry's next try five minutes ahead, so the claim must honour the time it reads.
    with failed_run() as session:
        for entry in list_entries(session):
            entry.next_attempt_at = utcnow() + timedelta(minutes=5)
        session.commit()
    assert reprocess_failed(db_url=db_url) == []


def test_reprocessing_with_a_larger_budget_updates_the_same_results(failed_run, db_url) -> None:
    with failed_run() as session:
        for entry in list_entries(session):
            requeue(session, entry.id)
        calls_before = session.scalar(select(func.count(ModelCall.id)))
    (summary,) = reprocess_failed(db_url=db_url, overrides={"format_max_tokens": 1024})
    assert summary.records == 2
    with failed_run() as session:
        results = session.scalars(select(Result)).all()
        entries = session.scalars(select(RetryEntry)).all()
        run = session.get(Run, summary.run_id)
        calls_after = session.scalar(select(func.count(ModelCall.id)))
    assert len(results) == 3  # still exactly one result per record
    assert run.flow == "reprocess_failed" and run.state == "finished"
    assert calls_after >= calls_before + 4  # at least one reasoning and one formatting call per record
    reprocessed = [r for r in results if r.run_id == summary.run_id]
    assert len(reprocessed) == 2 and all(r.formatting_finish == "stop" for r in reprocessed)
    still_failed = {r.record_id for r in reprocessed if r.status == "failed"}
    assert {e.record_id for e in entries} == still_failed
    assert all(e.attempts == 1 and e.state == "waiting" for e in entries)  # requeue reset them to 0


def test_dead_letter_after_the_limit_and_requeue_from_the_cli(failed_run, db_url, monkeypatch) -> None:
    monkeypatch.setenv("FORMWORK_QUEUE_MAX_ATTEMPTS", "1")  # requeue resets attempts to 0
    monkeypatch.setenv("FORMWORK_FORMAT_MAX_TOKENS", "3")
    with failed_run() as session:
        first = list_entries(session)[0]
        requeue(session, first.id)
    reprocess_failed(db_url=db_url, limit=1)
    with failed_run() as session:
        dead = session.get(RetryEntry, first.id)
        assert (dead.state, dead.attempts) == ("dead", 1)
    shown = CliRunner().invoke(app, ["queue", "--db", db_url, "--state", "dead"])
    assert shown.exit_code == 0 and "dead 1" in shown.output
    again = CliRunner().invoke(app, ["requeue", str(first.id), "--db", db_url])
    assert again.exit_code == 0 and "waiting again" in again.output
    with failed_run() as session:
        assert session.get(RetryEntry, first.id).state == "waiting"
