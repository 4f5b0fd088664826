"""The `openai` engine against real servers: llama-cpp-python's own OpenAI server
(tests/llama_server_fixture.py) and the vLLM CPU server, both on the bundled SmolLM2-135M.

What each server does with a dialect it does not speak is observed here, not assumed: llama-cpp-python
accepts the top-level `json_schema` and `format` fields and ignores them (HTTP 200, free text), and
answers OpenAI's `response_format` json_schema with HTTP 500 and a validation error (no 4xx: the engine
still treats it as a request no retry can mend). Its logprobs come before its grammar; renormalised,
they are held against the embedded engine's masked ones on the same prompts and the same GGUF.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import jsonschema
import pytest

from formwork.db.models import Calibration, Run
from formwork.db.session import session_factory
from formwork.flows.api import extract
from formwork.flows.review import ReviewItem, render_review
from formwork.flows.run_start import new_context
from formwork.schemas.registry import load_schema
from formwork.tasks.confidence.probability import field_confidences
from formwork.tasks.confidence.renormalise import renormalised
from formwork.tasks.confidence.score import ScoreModel
from formwork.tasks.engines import open_openai_server
from formwork.tasks.engines.base import RequestRejected, Sampling
from formwork.tasks.engines.openai_server import OpenAIServerEngine, schema_fields
from formwork.tasks.evaluation.key import pipeline_version, sampling_digest
from formwork.tasks.settings import Settings
from tests.misbehaving_server import MisbehavingServer
from tests.vllm_fixture import VllmServer

SENTIMENT: dict[str, Any] = {
    "title": "sentiment", "type": "object", "additionalProperties": False,
    "properties": {"sentiment": {"enum": ["positive", "negative", "neutral"]}}, "required": ["sentiment"],
}  # fmt: skip
REVIEW = [{"role": "user", "content": "Review: 'The kettle broke after two days. Avoid.' Label it."}]
RECORDS = ["Taxi to the airport 42.50 EUR on 2024-03-05", "Lunch with the client, 18 USD"]

PROBABILITY = re.compile(r"(?<=probability )[\d.]+")  # as the judge writes it in a reason


def _engine(server: VllmServer, dialect: str = "auto", **options: Any) -> OpenAIServerEngine:
    return OpenAIServerEngine(server.base_url, None, dialect=dialect, timeout_s=120, **options)


@pytest.mark.llama_server
def test_auto_picks_json_object_schema_and_the_output_is_constrained(llama_server: VllmServer) -> None:
    engine = _engine(llama_server)
    info = engine.check()
    assert (info.dialect, info.logprob_mode, info.model) == (
        "json_object+schema", "renormalised", llama_server.model)  # fmt: skip
    done = engine.complete(REVIEW, Sampling(max_tokens=32), SENTIMENT)
    assert done.finish_reason == "stop" and done.engine == "openai:json_object+schema"
    jsonschema.validate(json.loads(done.text), SENTIMENT)
    assert done.token_logprobs == ()  # reported before the grammar: never taken as they are
    assert done.pre_mask is not None and done.pre_mask.schema == SENTIMENT
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
    said = r"HTTP 500: .*cannot read a request in dialect 'json_schema'"
    with pytest.raises(RequestRejected, match=said) as caught:
        _engine(llama_server, "json_schema").check()
    assert not caught.value.retryable and "not retried" in str(caught.value)


# Three prompts with two enums and a boolean; the server spaces its JSON (`{ "answer": "`), the embedded
# engine does not, so the contexts differ slightly. Both are lower bounds, and a token that spells the
# written characters but may still lead to a rival (the server's lone ` ` before `"happy"`) counts for
# neither side. Measured here: 7 values scored alike by both, mean |difference| 0.18, max 0.40 (before
# the rival rule the server counted such tokens for the written value: 0.085 and 0.165). What this
# pins is that the two are the same kind of number: raw pre-mask probabilities, or 1 for every
# value, would be far off. The bounds leave room for run-to-run noise (~0.01).
AGREE: dict[str, Any] = {
    "title": "agree", "type": "object", "additionalProperties": False, "required": ["answer", "paid", "mood"],
    "properties": {"answer": {"enum": ["yes", "no"]}, "paid": {"type": "boolean"},
                   "mood": {"enum": ["happy", "sad", "angry"]}},
}  # fmt: skip
ASKED = ["Is water wet? Answer yes or no, say if it was paid, and the mood.",
         "I paid 20 dollars and I am furious. Is this fair? Answer as JSON.",
         "The sun is shining and I love it! Did I pay? No."]  # fmt: skip


@pytest.mark.llama_server
def test_renormalised_confidences_agree_with_the_embedded_engines_masked_ones(
    llama_server: VllmServer, local_engine: Any
) -> None:
    engine = _engine(llama_server, "json_object+schema")
    diffs = []
    for asked in ASKED:
        messages = [{"role": "user", "content": asked}]
        server, embedded = (e.complete(messages, Sampling(max_tokens=60), AGREE)
                            for e in (engine, local_engine))  # fmt: skip
        theirs, ours = json.loads(server.text), json.loads(embedded.text)
        got = field_confidences(AGREE, theirs, renormalised(server, theirs))
        wanted = field_confidences(AGREE, ours, embedded)
        diffs += [abs(got[p] - wanted[p]) for p in got.keys() & wanted.keys() if theirs[p] == ours[p]]
    engine.close()
    assert len(diffs) >= 5  # most values are scored on both sides
    assert sum(diffs) / len(diffs) <= 0.25 and max(diffs) <= 0.45


@pytest.mark.parametrize(
    ("settings", "schema", "refused"),
    [
        ({}, None, True),  # the calibration's default bounds every value, even at min_confidence 0
        ({"calibration": False, "min_confidence": 0.5}, None, True),
        ({"calibration": False}, {"properties": {"a": {"x-min-confidence": {"*": 0.9}}}}, True),
        ({"calibration": False}, {"properties": {"a": {"x-min-confidence": 0}}}, False),
    ],
)
def test_a_server_without_logprobs_is_refused_whenever_a_bound_applies(
    settings: dict[str, Any], schema: dict[str, Any] | None, refused: bool
) -> None:
    with MisbehavingServer("no_logprobs") as fake:
        configured = Settings(engine="openai", openai_url=fake.base_url, openai_dialect="json_schema",
                              **settings)  # fmt: skip
        engine = open_openai_server(configured, fake.base_url, schema_body=schema)
        if refused:
            with pytest.raises(RequestRejected, match="no usable logprobs in dialect 'json_schema'"):
                engine.check()
        else:
            assert engine.check().logprob_mode == "none"
        engine.close()


def test_an_openai_run_never_applies_another_engines_calibration(db_url: str) -> None:
    expense = load_schema("expense")
    engine = OpenAIServerEngine("http://127.0.0.1:9/v1", "smollm2-gguf", dialect="json_object+schema")
    sessions = session_factory(db_url)

    def calibration(kind: str) -> Calibration:
        settings = Settings(engine="openai")
        return Calibration(schema_name=expense.name, schema_version=expense.version,
                           schema_hash=expense.digest, model="smollm2-gguf", engine=kind, mode="two-pass",
                           model_hash=None, grounded=True, reasoning_model="smollm2-gguf",
                           sampling=sampling_digest(settings), pipeline=pipeline_version(),
                           method="per-value", threshold=None, target=0.95, level=0.9, bound=0.0,
                           kept=0, correct=0, fields={}, score_model=ScoreModel().as_dict(),
                           gold_hash="0" * 64, gold_size=60)  # fmt: skip

    def applied() -> dict[str, Any]:
        settings = Settings(engine="openai")
        context = new_context(sessions, settings, expense, (engine, engine), flow="t", source="s")
        with sessions() as session:
            run = session.get(Run, context.run_id)
            assert run is not None and run.engine == "openai:json_object+schema"
            return dict(run.confidence)

    with sessions() as session:  # the same model name under the embedded, vLLM and bare openai kinds
        kinds = ("local", "vllm", "openai", "openai:json_schema")
        session.add_all([calibration(kind) for kind in kinds])
        session.commit()
    assert applied()["calibration"] is None  # the conservative default, not theirs
    with sessions() as session:
        session.add(mine := calibration("openai:json_object+schema"))
        session.commit()
    assert applied()["calibration"] == mine.id


@pytest.mark.llama_server
def test_a_full_extraction_run_through_the_llama_cpp_python_server(llama_server: VllmServer) -> None:
    settings = Settings(engine="openai", openai_url=llama_server.base_url, reasoning_max_tokens=48,
                        max_attempts=1)  # fmt: skip
    rows = extract(RECORDS[:1], "expense", settings=settings)
    assert len(rows) == 1 and rows[0].formatting_finish == "stop"
    answer = rows[0].data if rows[0].status != "failed" else rows[0].unchecked  # a failed row's is unchecked
    assert answer is not None
    assert rows[0].status in ("ok", "partial", "failed") and isinstance(
        answer.get("amount"), float | int | None
    )
    assert rows[0].evidence and all(e["engine"] == "openai:json_object+schema" for e in rows[0].evidence)
    for entry in rows[0].evidence:  # a confidence says what it is; a value without one says none
        assert entry["logprob_mode"] == ("renormalised" if "confidence" in entry else "none")
    row = rows[0]
    item = ReviewItem("r1", row.text, row.status, row.data, row.errors, row.nulled, row.reasoning_finish,
                      row.formatting_finish, row.evidence)  # fmt: skip
    page = render_review([item], "t")
    assert page.count("openai:json_object+schema)") == len(row.evidence)  # beside every value's p


@pytest.mark.vllm
def test_check_reads_masked_logprobs_from_vllm(vllm_server: VllmServer) -> None:
    info = _engine(vllm_server, needs_logprobs=True).check()
    assert (info.dialect, info.logprob_mode) == ("json_schema", "masked")


@pytest.mark.vllm
def test_the_vllm_server_gives_the_same_rows_through_either_engine(vllm_server: VllmServer) -> None:
    # one request at a time: vLLM's CPU build batches requests in flight together, and another batch
    # can shift a logprob (a loaded run here saw the two engines' first rows differ)
    common: dict[str, Any] = {"reasoning_max_tokens": 48, "max_attempts": 1, "vllm_max_concurrency": 1}
    through_vllm = extract(RECORDS, "expense", settings=Settings(
        engine="vllm", vllm_url=vllm_server.base_url, **common))  # fmt: skip
    as_openai = Settings(
        engine="openai", openai_url=vllm_server.base_url, openai_dialect="json_schema", **common
    )
    through_openai = extract(RECORDS, "expense", settings=as_openai)
    # the same rows, values and reasons; a probability may differ in its second digit (vLLM's CPU build
    # computes a prompt it has cached in its prefix cache a little differently: 0.62 against 0.60 seen)
    assert [(r.status, r.data, [PROBABILITY.sub("p", e) for e in r.errors]) for r in through_openai] == [
        (r.status, r.data, [PROBABILITY.sub("p", e) for e in r.errors]) for r in through_vllm]  # fmt: skip
    for one, other in zip(through_openai, through_vllm, strict=True):
        mine, theirs = (PROBABILITY.findall(" ".join(row.errors)) for row in (one, other))
        pairs = zip(mine, theirs, strict=True)  # the same reasons, so as many probabilities
        assert all(abs(float(a) - float(b)) <= 0.05 for a, b in pairs), (one.errors, other.errors)
    assert all(r.formatting_finish == "stop" for r in through_vllm)


def test_an_unknown_dialect_fails_before_any_request() -> None:
    with pytest.raises(ValueError, match="one of json_schema, json_object\\+schema, llama-server, ollama"):
        OpenAIServerEngine("http://127.0.0.1:9/v1", dialect="grpc")
