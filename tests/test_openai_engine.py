"""The `openai` engine against real servers: llama-cpp-python's own OpenAI server
(tests/llama_server_fixture.py) and the vLLM CPU server, both on the bundled SmolLM2-135M.

What each server does with a dialect it does not speak is observed here, not assumed: llama-cpp-python
accepts the top-level `json_schema` and `format` fields and ignores them (HTTP 200, free text), and
answers OpenAI's `response_format` json_schema with HTTP 500 and a validation error.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema
import pytest

from formwork.flows.api import extract
from formwork.tasks.engines.base import RequestRejected, Sampling
from formwork.tasks.engines.openai_server import OpenAIServerEngine, schema_fields
from formwork.tasks.settings import Settings
from tests.vllm_fixture import VllmServer

SENTIMENT: dict[str, Any] = {
    "title": "sentiment", "type": "object", "additionalProperties": False,
    "properties": {"sentiment": {"enum": ["positive", "negative", "neutral"]}}, "required": ["sentiment"],
}  # fmt: skip
REVIEW = [{"role": "user", "content": "Review: 'The kettle broke after two days. Avoid.' Label it."}]
RECORDS = ["Taxi to the airport 42.50 EUR on 2024-03-05", "Lunch with the client, 18 USD"]


def _engine(server: VllmServer, dialect: str = "auto", **options: Any) -> OpenAIServerEngine:
    return OpenAIServerEngine(server.base_url, None, dialect=dialect, timeout_s=120, **options)


@pytest.mark.llama_server
def test_auto_picks_json_object_schema_and_the_output_is_constrained(llama_server: VllmServer) -> None:
    engine = _engine(llama_server)
    info = engine.check()
    assert (info.dialect, info.logprob_mode, info.model) == ("json_object+schema", "none", llama_server.model)
    done = engine.complete(REVIEW, Sampling(max_tokens=32), SENTIMENT)
    assert done.finish_reason == "stop"
    jsonschema.validate(json.loads(done.text), SENTIMENT)
    assert done.token_logprobs == ()  # reported before the grammar: never a confidence
    engine.close()


@pytest.mark.llama_server
@pytest.mark.parametrize("dialect", ["llama-server", "ollama"])
def test_the_probe_refuses_a_server_that_ignores_the_schema(llama_server: VllmServer, dialect: str) -> None:
    body = {"messages": REVIEW, "max_tokens": 24, "temperature": 0, **schema_fields(dialect, SENTIMENT)}
    raw = httpx.post(f"{llama_server.base_url}/chat/completions", timeout=120, json=body)
    assert raw.status_code == 200  # accepted, and ignored: nothing but the probe notices
    with pytest.raises(RequestRejected, match=f"ignores the schema in dialect '{dialect}'"):
        _engine(llama_server, dialect).check()


@pytest.mark.llama_server
def test_a_dialect_the_server_cannot_read_is_rejected_not_retried(llama_server: VllmServer) -> None:
    raw = httpx.post(f"{llama_server.base_url}/chat/completions", timeout=60, json={
        "messages": REVIEW, "max_tokens": 8, **schema_fields("json_schema", SENTIMENT)})  # fmt: skip
    assert raw.status_code == 500 and "validation error" in raw.text  # its answer, though 4xx is meant
    with pytest.raises(RequestRejected, match="dialect 'json_schema'") as caught:
        _engine(llama_server, "json_schema").check()
    assert not caught.value.retryable


@pytest.mark.llama_server
def test_a_confidence_bound_refuses_logprobs_from_before_the_mask(llama_server: VllmServer) -> None:
    with pytest.raises(RequestRejected, match="no grammar-masked logprobs"):
        _engine(llama_server, needs_logprobs=True).check()


@pytest.mark.llama_server
def test_a_full_extraction_run_through_the_llama_cpp_python_server(llama_server: VllmServer) -> None:
    settings = Settings(engine="openai", openai_url=llama_server.base_url, reasoning_max_tokens=48,
                        max_attempts=1)  # fmt: skip
    rows = extract(RECORDS[:1], "expense", settings=settings)
    assert len(rows) == 1 and rows[0].formatting_finish == "stop" and rows[0].data is not None
    assert rows[0].status in ("ok", "partial", "failed") and isinstance(
        rows[0].data.get("amount"), float | int | None
    )


@pytest.mark.vllm
def test_check_reads_masked_logprobs_from_vllm(vllm_server: VllmServer) -> None:
    info = _engine(vllm_server, needs_logprobs=True).check()
    assert (info.dialect, info.logprob_mode) == ("json_schema", "masked")


@pytest.mark.vllm
def test_the_vllm_server_gives_the_same_rows_through_either_engine(vllm_server: VllmServer) -> None:
    common: dict[str, Any] = {"reasoning_max_tokens": 48, "max_attempts": 1}
    through_vllm = extract(RECORDS, "expense", settings=Settings(
        engine="vllm", vllm_url=vllm_server.base_url, **common))  # fmt: skip
    as_openai = Settings(
        engine="openai", openai_url=vllm_server.base_url, openai_dialect="json_schema", **common
    )
    through_openai = extract(RECORDS, "expense", settings=as_openai)
    assert [(r.status, r.data, r.errors) for r in through_openai] == [
        (r.status, r.data, r.errors) for r in through_vllm]  # fmt: skip
    assert all(r.formatting_finish == "stop" for r in through_vllm)


def test_an_unknown_dialect_fails_before_any_request() -> None:
    with pytest.raises(ValueError, match="one of json_schema, json_object\\+schema, llama-server, ollama"):
        OpenAIServerEngine("http://127.0.0.1:9/v1", dialect="grpc")
