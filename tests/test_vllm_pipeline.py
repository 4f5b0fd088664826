"""The whole two-pass pipeline through a real vLLM server (CPU build, SmolLM2-135M), judged from the database.

Each test runs the `batch_extract` flow under the session's Prefect harness, with the settings pointing
at the session server from tests/vllm_fixture.py, then reads back what the run stored. A 135M model gets
content wrong often; what is pinned here is the framework's part: every formatting output that
stopped is schema-valid JSON, every record gets exactly one result with its finish reasons, every call
is a row with its usage, a token budget that is too small fails the record with the reason, concurrent
records all land, and a server that is not there refuses the run before anything is written.

Budgets are small (48 reasoning tokens, one attempt) because the CPU server decodes ~10-80 tokens/s.
"""

from __future__ import annotations

import json
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from formwork.db.models import ModelCall, Record, Result, Run
from formwork.db.queries import RunSummary
from formwork.db.session import session_factory
from formwork.flows.batch_extract import batch_extract, source_label
from formwork.schemas.registry import builtin_names, load_schema
from formwork.tasks.calls import UNVOUCHED
from formwork.tasks.confidence.probability import chosen, value_paths
from formwork.tasks.engines.base import EngineError
from formwork.tasks.settings import Settings
from tests.vllm_fixture import VllmServer

pytestmark = [pytest.mark.vllm, pytest.mark.usefixtures("prefect_harness")]

REASONING_MAX_TOKENS = 48
FINISHES = {"stop", "length"}  # what a healthy server answers; "error"/"abort" would mean a fault

# A few realistic messages per built-in schema, one of them in Chinese.
INPUTS: dict[str, list[str]] = {
    "expense": [
        "Lunch with the Acme team on 2024-03-14, paid $42.80 by Maria. Bill to project Apollo.",
        "Taxi from the airport to the hotel, 35 EUR, March 3rd 2024 (Tom)",
        "6月3日和客户吃晚饭，花了480元，项目：星河",
    ],
    "contact": [
        "Best regards,\nJane Okafor\nHead of Sales, Northwind Ltd\n"
        "jane.okafor@northwind.example\n+44 20 7946 0958",
        "Call me on 555-0134 any time. - Raj (raj@pixelmill.io)",
        "此致\n王小明\n星河科技有限公司\n电话：+86 10 6552 1234\n邮箱：wang.xm@xinghe.cn",
    ],
    "chat_tag": [
        "Anna: I can't believe you forgot my birthday again.",
        "Ben: We won the final!!! Drinks are on me tonight!",
        "小李：明天的考试我一点都没准备，好害怕。",
    ],
    "receipt": [
        "CAFE LUNA 2024-05-02\n2x Espresso 5.00\n1x Croissant 2.50\nTOTAL EUR 7.50",
        "Walmart receipt: milk $3.49, bread $2.99, total $6.48",
    ],
    "shop_receipt": [
        "KEDAI RUNCIT MAJU SDN BHD\nNO 12, JALAN MAWAR 3, 81100 JOHOR BAHRU\nDATE: 25/12/2018\nTOTAL RM 9.00",
        "Corner Deli, 14 High St, Leeds. 02/03/2024. Total due: 12.40",
    ],
    "shopping_list": [
        "Can you grab 2 cartons of milk, a loaf of bread and 6 eggs from Tesco on the way home?",
        "Need for the party: 3 bags of chips, 12 cans of soda, napkins.",
        "去超市买两瓶酱油、一袋大米和三个西红柿。",
    ],
}


@dataclass
class Stored:
    """What one run left in the database."""

    run: Run
    records: list[Record]
    results: list[Result]
    calls: list[ModelCall]

    def calls_of(self, record_id: int, pass_name: str) -> list[ModelCall]:
        return [c for c in self.calls if c.record_id == record_id and c.pass_name == pass_name]


@pytest.fixture
def point_at(monkeypatch: pytest.MonkeyPatch, vllm_server: VllmServer, tmp_path: Path) -> Callable[..., None]:
    """Point Formwork's settings at the session server: small budgets, one attempt, `overrides` on top.

    Every FORMWORK_* setting is cleared first, so a variable set in the shell cannot change the test.
    """

    def point(**overrides: Any) -> None:
        for name in Settings.model_fields:
            monkeypatch.delenv(f"FORMWORK_{name.upper()}", raising=False)
        env = {
            "FORMWORK_CONFIG": str(tmp_path / "no-formwork.toml"),  # no config file from the cwd
            "FORMWORK_ENGINE": "vllm",
            "FORMWORK_VLLM_URL": vllm_server.base_url,
            "FORMWORK_VLLM_MODEL": vllm_server.model,
            "FORMWORK_REASONING_MAX_TOKENS": REASONING_MAX_TOKENS,
            "FORMWORK_MAX_ATTEMPTS": 1,
            # the CPU server read prompts at 18 tokens/s on a slow day: a receipt's took past 120 s
            "FORMWORK_VLLM_TIMEOUT_S": 600,
            **overrides,
        }
        for key, value in env.items():
            monkeypatch.setenv(key, str(value))

    return point


def _write(write_jsonl: Callable[..., Path], texts: list[str], name: str) -> Path:
    return write_jsonl([{"id": f"{name}-{i}", "text": t} for i, t in enumerate(texts)], f"{name}.jsonl")


def _stored(db_url: str, run_id: int, source: Path) -> Stored:
    with session_factory(db_url)() as session:
        run = session.get(Run, run_id)
        assert run is not None, f"no run {run_id} in the database"
        records = list(session.scalars(select(Record).where(Record.source == source_label(str(source)))))
        record_ids = [r.id for r in records]
        results = list(session.scalars(select(Result).where(Result.record_id.in_(record_ids))))
        calls = list(session.scalars(select(ModelCall).where(ModelCall.run_id == run_id)))
    return Stored(run, records, results, calls)


def _assert_run_fully_stored(stored: Stored, summary: RunSummary, texts: list[str], model: str) -> None:
    """One result per record, two call rows per record (one attempt), usage and model on every row."""
    assert summary.state == "finished"
    assert stored.run.state == "finished"
    assert stored.run.engine == "vllm"
    assert (stored.run.reasoning_model, stored.run.formatting_model) == (model, model)
    assert sorted(r.text for r in stored.records) == sorted(texts)
    record_ids = {r.id for r in stored.records}

    per_record = Counter(r.record_id for r in stored.results)
    assert per_record == Counter(record_ids), "every record needs exactly one result"
    for result in stored.results:
        assert result.run_id == stored.run.id
        assert result.status in ("ok", "partial", "failed")
        assert result.reasoning_finish in FINISHES, (result.reasoning_finish, result.errors)
        assert result.formatting_finish in FINISHES, (result.formatting_finish, result.errors)
        assert result.attempts == 1

    assert summary.records == len(texts)
    assert summary.calls == len(stored.calls) == 2 * len(texts)
    assert {c.record_id for c in stored.calls} == record_ids
    for call in stored.calls:
        assert call.error is None, call.error
        assert call.model == model
        assert call.prompt_tokens > 0
        assert call.completion_tokens > 0
        assert call.duration_s > 0
        assert call.attempt == 1
    assert summary.prompt_tokens == sum(c.prompt_tokens for c in stored.calls)
    assert summary.completion_tokens == sum(c.completion_tokens for c in stored.calls)
    for result in stored.results:
        (reasoning,) = stored.calls_of(result.record_id, "reasoning")
        (formatting,) = stored.calls_of(result.record_id, "formatting")
        assert reasoning.max_tokens == REASONING_MAX_TOKENS
        assert reasoning.completion_tokens <= REASONING_MAX_TOKENS
        assert formatting.completion_tokens <= formatting.max_tokens
        # The result's finish reasons are the calls' own, not a guess.
        assert (result.reasoning_finish, result.formatting_finish) == (
            reasoning.finish_reason,
            formatting.finish_reason,
        )


def test_every_builtin_schema_has_inputs_here() -> None:
    assert sorted(INPUTS) == builtin_names()


@pytest.mark.parametrize("schema_name", builtin_names())
def test_pipeline_through_the_server_stores_valid_json_for_every_builtin_schema(
    schema_name: str, point_at, write_jsonl, db_url: str, vllm_server: VllmServer
) -> None:
    point_at()
    texts = INPUTS[schema_name]
    source = _write(write_jsonl, texts, schema_name)
    schema = load_schema(schema_name)

    summary = batch_extract(str(source), schema_name, db_url=db_url)

    stored = _stored(db_url, summary.run_id, source)
    _assert_run_fully_stored(stored, summary, texts, vllm_server.model)
    assert summary.schema == schema.label

    # Every formatting output that stopped on its own is JSON the schema accepts: the grammar's promise.
    stopped = [c for c in stored.calls if c.pass_name == "formatting" and c.finish_reason == "stop"]
    assert stopped, "no formatting call stopped by itself: the check below would be empty"
    for call in stopped:
        data = json.loads(call.output)
        errors = [e.message for e in schema.validator.iter_errors(data)]
        assert not errors, f"{call.output!r}: {errors}"

    # Every value the formatting pass wrote is stored with its probability, from the
    # server's logprobs (vLLM masks before its log-softmax: tests/test_vllm_engine.py).
    weighed = 0
    for result in stored.results:
        (formatting,) = stored.calls_of(result.record_id, "formatting")
        if formatting.finish_reason != "stop":
            continue
        rows = {row["path"]: row for row in result.evidence or []}
        for path, node in value_paths(schema.checked_body, json.loads(formatting.output)):
            # a long free string's probability can round to 0 in the stored evidence; a choice's cannot
            low = 0 if not chosen(node) else 1e-4
            assert low <= rows[path]["confidence"] <= 1, (path, rows.get(path))
            weighed += 1
    assert weighed or schema_name != "chat_tag", "chat_tag's emotion must have been weighed"

    # The status follows the rules in tasks/validate.py, from what was stored.
    for result in stored.results:
        (formatting,) = stored.calls_of(result.record_id, "formatting")
        if result.reasoning_finish == "length":
            assert result.status == "failed"
            assert any("reasoning pass stopped at length" in e for e in result.errors), result.errors
        if result.status == "ok":
            assert (result.reasoning_finish, result.formatting_finish) == ("stop", "stop")
            assert result.errors == [] and result.nulled == []
            assert result.data == json.loads(formatting.output)
        if result.status == "partial":
            held = any(e.startswith(UNVOUCHED) for e in result.errors)  # sure, but uncalibrated
            assert (result.nulled or held) and all(result.data[key] is None for key in result.nulled)
        if result.status == "failed":
            assert result.errors, "a failed result must say why"


def test_a_tiny_formatting_budget_is_cut_at_length_and_fails_with_the_reason(
    point_at, write_jsonl, db_url: str, vllm_server: VllmServer
) -> None:
    point_at(FORMWORK_FORMAT_MAX_TOKENS=3)
    texts = INPUTS["expense"][:2]
    source = _write(write_jsonl, texts, "expense-tiny")

    summary = batch_extract(str(source), "expense", db_url=db_url)

    stored = _stored(db_url, summary.run_id, source)
    _assert_run_fully_stored(stored, summary, texts, vllm_server.model)
    assert summary.statuses == {"failed": len(texts)}
    assert summary.formatting_finishes == {"length": len(texts)}
    for call in (c for c in stored.calls if c.pass_name == "formatting"):
        assert (call.finish_reason, call.max_tokens, call.completion_tokens) == ("length", 3, 3)
        with pytest.raises(json.JSONDecodeError):
            json.loads(call.output)  # a cut-off prefix, stored as it came
    for result in stored.results:
        assert (result.status, result.formatting_finish, result.data) == ("failed", "length", None)
        assert result.retryable is False
        assert any("finish=length" in e for e in result.errors), result.errors


def test_more_records_than_slots_all_land_and_their_calls_overlap(
    point_at, write_jsonl, db_url: str, vllm_server: VllmServer
) -> None:
    point_at(FORMWORK_VLLM_MAX_CONCURRENCY=8)
    amounts = [12.5, 30, 7.2, 99, 45, 18.75, 60, 5, 22, 140]
    people = ["Ana", "Ben", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jun"]
    texts = [f"{who} paid ${amount} for a team lunch" for who, amount in zip(people, amounts, strict=True)]
    source = _write(write_jsonl, texts, "expense-many")

    started = time.monotonic()
    summary = batch_extract(str(source), "expense", db_url=db_url)
    wall = time.monotonic() - started

    stored = _stored(db_url, summary.run_id, source)
    _assert_run_fully_stored(stored, summary, texts, vllm_server.model)
    assert len(stored.results) == len(texts) >= 8
    for result in stored.results:
        assert len(stored.calls_of(result.record_id, "reasoning")) == 1
        assert len(stored.calls_of(result.record_id, "formatting")) == 1
    # One call after another, the calls' durations would add up to less than the run's wall time.
    busy = sum(c.duration_s for c in stored.calls)
    assert busy > 2.0 * wall, f"calls took {busy:.1f} s in all within {wall:.1f} s: little overlap"


def test_a_closed_port_refuses_the_run_before_anything_is_written(point_at, write_jsonl, db_url: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    point_at(FORMWORK_VLLM_URL=closed)
    source = _write(write_jsonl, INPUTS["expense"][:1], "expense-closed")

    started = time.monotonic()
    with pytest.raises(EngineError) as caught:
        batch_extract(str(source), "expense", db_url=db_url)
    assert time.monotonic() - started < 60, "a refused connection should fail fast, not wait"

    message = str(caught.value)
    assert closed in message, message  # which address was tried
    assert "server running" in caught.value.hint, caught.value.hint  # what to do about it
    assert caught.value.retryable is True
    with session_factory(db_url)() as session:
        assert session.scalar(select(func.count()).select_from(Run)) == 0
        assert session.scalar(select(func.count()).select_from(Record)) == 0
