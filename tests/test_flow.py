"""batch_extract end to end under Prefect, on the embedded model and a real SQLite file."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

import formwork.tasks.engines
from formwork.db.models import ModelCall, Record, Result, Run
from formwork.db.session import session_factory
from formwork.flows.batch_extract import batch_extract
from formwork.schemas.registry import SchemaProblem

pytestmark = pytest.mark.slow

GOOD = [
    {"id": "taxi", "text": "Taxi to the airport, 35 EUR, 2024-03-03, Tom"},
    {"id": "lunch", "text": "Lunch with Acme, $42.80, Maria, project Apollo"},
]
BAD = [{"id": "empty", "text": ""}, "{this line is broken"]


@pytest.fixture
def fast(monkeypatch) -> None:
    """Short reasoning and one attempt: these tests pin the plumbing, not the model's accuracy."""
    monkeypatch.setenv("FORMWORK_REASONING_MAX_TOKENS", "32")
    monkeypatch.setenv("FORMWORK_MAX_ATTEMPTS", "1")


def _count(sessions, query) -> int:
    with sessions() as session:
        return session.scalar(query)


def test_every_record_stored_judged_and_explained(prefect_harness, local_engine, fast, write_jsonl, db_url):
    summary = batch_extract(str(write_jsonl(GOOD + BAD)), "expense", db_url=db_url)
    sessions = session_factory(db_url)
    with sessions() as session:
        results = {r.key: res for res, r in session.execute(select(Result, Record).join(Record)).all()}
        calls = session.scalars(select(ModelCall)).all()
        run = session.get(Run, summary.run_id)
    assert summary.records == 4 and run.state == "finished" and run.finished_at is not None
    assert set(results) == {"taxi", "lunch", "empty", "line-4"}
    assert results["empty"].status == "failed" and "the text is empty" in results["empty"].errors[0]
    assert results["line-4"].status == "failed" and "not valid JSON" in results["line-4"].errors[0]
    for key in ("taxi", "lunch"):
        assert results[key].status in ("ok", "partial", "failed")
        assert results[key].formatting_finish in ("stop", "length")
        assert results[key].reasoning_finish in ("stop", "length")
    # one row per model call: one reasoning and one formatting call per good record, none for bad ones
    by_record = {}
    for call in calls:
        by_record.setdefault(call.record_id, []).append(call.pass_name)
    assert sorted(sorted(v) for v in by_record.values()) == [["formatting", "reasoning"]] * 2
    assert all(
        c.prompt_tokens > 0 and c.completion_tokens > 0 and c.model.startswith("SmolLM2") for c in calls
    )
    assert summary.calls == len(calls) == 4


def test_records_are_stored_before_any_model_sees_them(
    prefect_harness, local_engine, fast, write_jsonl, db_url, monkeypatch
):
    """A spy around the real engine counts the stored records at the first model call."""
    seen: list[int] = []
    sessions = session_factory(db_url)

    class Spy:
        model, max_concurrency = local_engine.model, 1

        def complete(self, *args, **kwargs):
            if not seen:
                seen.append(_count(sessions, select(func.count(Record.id))))
            return local_engine.complete(*args, **kwargs)

    spies = lambda settings, schema_body=None: (Spy(), Spy())  # noqa: E731
    monkeypatch.setattr(formwork.tasks.engines, "open_engines", spies)
    batch_extract(str(write_jsonl(GOOD)), "expense", db_url=db_url)
    assert seen == [2]


def test_tiny_format_budget_gives_length_and_failed(
    prefect_harness, local_engine, fast, monkeypatch, write_jsonl, db_url
):
    monkeypatch.setenv("FORMWORK_FORMAT_MAX_TOKENS", "3")
    summary = batch_extract(str(write_jsonl(GOOD[:1])), "expense", db_url=db_url)
    with session_factory(db_url)() as session:
        result = session.scalars(select(Result)).one()
    assert summary.statuses == {"failed": 1}
    assert result.formatting_finish == "length"
    assert any("formatting pass stopped at length" in e or "no JSON came back" in e for e in result.errors)


def test_a_second_run_resumes_and_never_duplicates(prefect_harness, local_engine, fast, write_jsonl, db_url):
    path = write_jsonl(GOOD[:1])
    batch_extract(str(path), "expense", db_url=db_url)
    path.write_text(path.read_text() + '{"id": "new", "text": "Parking 12 CAD"}\n')
    second = batch_extract(str(path), "expense", db_url=db_url)
    sessions = session_factory(db_url)
    assert second.records == 1  # only the new record was processed
    assert _count(sessions, select(func.count(Result.id))) == 2
    assert _count(sessions, select(func.count(Record.id))) == 2


@pytest.mark.parametrize(
    ("schema", "message"), [("invoice", "unknown schema"), ("broken.json", "not readable")]
)
def test_a_bad_schema_refuses_the_run_before_anything_is_stored(
    prefect_harness, write_jsonl, db_url, tmp_path, schema, message
):
    if schema.endswith(".json"):
        schema = str(tmp_path / schema)
        (tmp_path / "broken.json").write_text("{oops")
    with pytest.raises(SchemaProblem, match=message):
        batch_extract(str(write_jsonl(GOOD)), schema, db_url=db_url)
    assert not (tmp_path / "formwork.db").exists()
