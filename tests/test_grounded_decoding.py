"""A per-record grammar cannot emit a value outside its candidates: on the real embedded model and on
the real CPU vLLM server, with grounding then finding every value in the text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Completion, Sampling
from formwork.tasks.extract import formatting_grammar
from formwork.tasks.prompts import formatting_messages
from formwork.tasks.validate import judge

EXPENSE = load_schema("expense")
# notes that invite invention: an amount and a name the text does not hold
TEXT, NOTES = "Taxi to the airport, 35 EUR on 2024-03-03, Tom", "Amount 99.99, paid by Alexander, 2023-01-01."


def _check(done: Completion) -> None:
    grammar = formatting_grammar(EXPENSE, TEXT, None, grounded=True)
    assert done.finish_reason == "stop", done
    data = json.loads(done.text)
    for key, node in grammar["properties"].items():
        allowed: list[Any] | None = (
            node.get("enum") if node != EXPENSE.grammar_body["properties"][key] else None
        )
        if allowed is not None:
            assert data[key] in allowed, (key, data[key])
    verdict = judge(EXPENSE, TEXT, Completion(NOTES, "stop", 1, 1, 0.1, "m"), done)
    assert not [e for e in verdict.errors if "does not appear in the text" in e], verdict.errors
    assert data["amount"] in (35, None) and data["date"] in ("2024-03-03", None)


def _call(engine: Any) -> Completion:
    grammar = formatting_grammar(EXPENSE, TEXT, None, grounded=True)
    assert (
        grammar != EXPENSE.grammar_body
        and formatting_grammar(EXPENSE, TEXT, None, False) is EXPENSE.grammar_body
    )
    return engine.complete(
        formatting_messages(EXPENSE, TEXT, NOTES), Sampling(format_budget(EXPENSE.body)), grammar
    )


@pytest.mark.slow
def test_the_embedded_engine_chooses_only_candidates(local_engine) -> None:
    _check(_call(local_engine))


@pytest.mark.vllm
def test_the_vllm_server_chooses_only_candidates(vllm_server) -> None:
    from formwork.tasks.engines.vllm_server import VllmServerEngine

    engine = VllmServerEngine(vllm_server.base_url, vllm_server.model, max_concurrency=2, timeout_s=120)
    try:
        _check(_call(engine))
    finally:
        engine.close()
