"""A chunk survives a fault no engine error maps: that record fails with the reason, the others go on."""

from __future__ import annotations

import json

from sqlalchemy import select

from formwork.db.models import Result, RetryEntry
from formwork.db.session import session_factory
from formwork.db.store import store_records
from formwork.flows.chunk import process_chunk
from formwork.flows.run_start import new_context
from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.settings import Settings
from formwork.tasks.sources import InputRecord

CHAT = json.dumps({"speaker": None, "emotion": "happy", "reply": "Nice!"})


class BreaksOnBoom:
    """Stands in for an engine bug (a plain RuntimeError), which no real engine raises on cue."""

    model, max_concurrency = "fault-injector", 2

    def complete(self, messages, sampling, schema=None) -> Completion:
        if "boom" in messages[1]["content"]:
            raise RuntimeError("tokenizer exploded")
        if schema is None:
            return Completion("notes", "stop", 10, 5, 0.01, self.model)
        return Completion(CHAT, "stop", 10, 5, 0.01, self.model, ((CHAT, 0.0),))  # sure of every choice

    def close(self) -> None: ...


def test_an_unexpected_error_fails_one_record_and_queues_it(db_url) -> None:
    sessions = session_factory(db_url)
    with sessions() as session:
        ids = store_records(
            session, "t", [InputRecord("a", "yay"), InputRecord("b", "boom"), InputRecord("c", "ok")]
        )
    engine = BreaksOnBoom()
    context = new_context(
        sessions,
        Settings(engine="local", calibration=False),
        load_schema("chat_tag"),
        (engine, engine),
        flow="test",
        source="t",
    )  # calibration off: the fault is under test, so a sure row may be ok
    done = process_chunk.fn(context, ids)
    assert sorted(done.statuses) == ["failed", "ok", "ok"] and done.held == []
    with sessions() as session:
        results = {r.record_id: r for r in session.scalars(select(Result))}
        queued = [e.record_id for e in session.scalars(select(RetryEntry))]
    assert results[ids[1]].errors == ["internal error: RuntimeError('tokenizer exploded')"]
    assert results[ids[0]].status == results[ids[2]].status == "ok"
    assert queued == [ids[1]]


class BreaksWhenFormatting(BreaksOnBoom):
    """Reasons fine, then hits the bug: the paid reasoning call must still be stored."""

    def complete(self, messages, sampling, schema=None) -> Completion:
        if schema is not None:
            raise RuntimeError("grammar compiler exploded")
        return super().complete(messages, sampling, schema)


def test_an_internal_error_keeps_the_calls_made_before_it() -> None:
    from formwork.tasks.calls import ExtractOptions
    from formwork.tasks.extract import extract_safely

    engine = BreaksWhenFormatting()
    outcome = extract_safely(7, "yay", load_schema("chat_tag"), (engine, engine), ExtractOptions())
    assert outcome.verdict.errors == ["internal error: RuntimeError('grammar compiler exploded')"]
    assert [call.pass_name for call in outcome.calls] == ["reasoning", "formatting"]
    assert outcome.calls[0].output == "notes" and outcome.calls[0].finish_reason == "stop"


def test_a_record_another_run_just_finished_is_never_left_claimed(local_engine, any_db_url) -> None:
    """Issue 41 point 9, in the racing order: `late` read both records as pending when its input was
    stored, `fast` then claimed and finished the first, and only then did `late`'s chunk claim. The
    finished record's claim row was free, so `late` won it, skipped it (it has a result) and held it
    until its own lease ran out after the run."""
    from datetime import timedelta

    from formwork.db.claims import claim_records
    from formwork.db.models import RecordClaim
    from formwork.db.store import QueuePolicy, save_outcomes, start_run
    from formwork.tasks.calls import Outcome
    from formwork.tasks.validate import Verdict

    sessions, schema = session_factory(any_db_url), load_schema("chat_tag")
    with sessions() as session:
        ids = store_records(session, "t", [InputRecord("a", ""), InputRecord("b", "")])
        fast = start_run(session, schema, flow="test", source="t", engine="e", reasoning_model="m",
                         formatting_model="m", setup="smollm2-135m@two-pass")  # fmt: skip  # late's reader
        assert claim_records(session, fast, schema, ids[:1], timedelta(minutes=1)) == ids[:1]
        done = Outcome(ids[0], Verdict("ok", {"speaker": None, "emotion": "happy", "reply": "x"}), 1)
        save_outcomes(session, fast, schema, [done], QueuePolicy())  # its result, its claim released
    late = new_context(sessions, Settings(engine="local", calibration=False), schema,
                       (local_engine, local_engine), flow="test", source="t")  # fmt: skip
    done = process_chunk.fn(late, ids)
    with sessions() as session:
        claims = session.execute(select(RecordClaim.record_id, RecordClaim.run_id)).all()
    assert done.statuses == ["failed"] and done.held == []  # only the unfinished one (empty: no model call)
    assert claims == []  # neither the finished record nor the processed one stays claimed
