"""Issue 54 point 15: the user's data is stored as it came; only Formwork's own words are redacted.

A record whose text says `password=…`, holds a URL's `user:pass@` or a string equal to a configured API
key is the text the model must read, the pages show and `results` exports: none of it becomes `***`.
Error messages, the run's settings and its source URL are still redacted.
"""

from __future__ import annotations

import json

from sqlalchemy import select
from typer.testing import CliRunner

from formwork.db.models import ModelCall, Record, Result, Run
from formwork.db.session import session_factory
from formwork.db.store import QueuePolicy, save_outcomes, start_run, store_records, text_digest
from formwork.flows.cli import app
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import CallLog, Outcome
from formwork.tasks.redact import register_secret
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict

EXPENSE = load_schema("expense")
API_KEY = "sk-user-text-kept-5417"  # registered as a configured key is, so redact() masks it
TEXT = (
    "Reset done: password=hunter2 for the portal https://bob:pw0rd@intranet.example/login, "
    f"and the key we were sent is {API_KEY}. Lunch 12.50 EUR."
)


def _stored(db_url: str) -> tuple[Record, Result, ModelCall, Run]:
    register_secret(API_KEY)
    with session_factory(db_url)() as session:
        meta = {"note": "password=hunter2", "link": "https://bob:pw0rd@intranet.example/"}
        [record_id] = store_records(session, "postgresql://me:dbpass@db/x", [InputRecord("k1", TEXT, meta)])
        run_id = start_run(session, EXPENSE, flow="test", source="postgresql://me:dbpass@db/x", engine="fake",
                           reasoning_model="m", formatting_model="m")  # fmt: skip
        data = {"who": "password=hunter2", "project": API_KEY}
        evidence = [{"path": "who", "text": "password=hunter2", "start": 12, "end": 28}]
        call = CallLog("formatting", 1, "m", "0" * 32, 64, "stop", 10, 5, 0.01, json.dumps(data),
                       error=f"the server said: bad key {API_KEY}")  # fmt: skip
        verdict = Verdict("failed", data, [f"note: {API_KEY} is not backed"], evidence=evidence)
        outcome = Outcome(record_id, verdict, 1, calls=[call], retryable=True)
        save_outcomes(session, run_id, EXPENSE, [outcome], QueuePolicy())
        return (session.get(Record, record_id), session.scalar(select(Result)),
                session.scalar(select(ModelCall)), session.get(Run, run_id))  # fmt: skip


def test_a_records_text_values_and_model_answer_are_stored_as_they_came(db_url: str) -> None:
    record, result, call, _ = _stored(db_url)
    assert record.text == TEXT and record.text_hash == text_digest(TEXT)
    assert record.meta == {"note": "password=hunter2", "link": "https://bob:pw0rd@intranet.example/"}
    assert result.data == {"who": "password=hunter2", "project": API_KEY}
    assert result.evidence[0]["text"] == "password=hunter2"
    assert json.loads(call.output) == {"who": "password=hunter2", "project": API_KEY}


def test_errors_settings_and_source_urls_are_still_redacted(db_url: str) -> None:
    record, result, call, run = _stored(db_url)
    assert API_KEY not in " ".join(result.errors) and "***" in result.errors[0]
    assert call.error == "the server said: bad key ***"
    assert "dbpass" not in record.source and "dbpass" not in run.source


def test_results_exports_the_text_values_as_stored(db_url: str) -> None:
    _stored(db_url)
    shown = CliRunner().invoke(app, ["results", "--format", "jsonl", "--db", db_url])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout.splitlines()[0])["unchecked"]["who"] == "password=hunter2"
