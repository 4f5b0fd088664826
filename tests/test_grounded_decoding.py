"""A per-record grammar cannot emit a value outside its candidates: on the real embedded model and on
the real CPU vLLM server, with grounding then finding every value in the text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines.base import Completion, Sampling
from formwork.tasks.prompts import formatting_messages
from formwork.tasks.validate import judge

EXPENSE = load_schema("expense")
GROUNDED, PLAIN = ExtractOptions(grounded_decoding=True), ExtractOptions(grounded_decoding=False)
# notes that invite invention: an amount and a name the text does not hold
TEXT, NOTES = "Taxi to the airport, 35 EUR on 2024-03-03, Tom", "Amount 99.99, paid by Alexander, 2023-01-01."


def _check(done: Completion) -> None:
    grammar = GROUNDED.formatting_grammar(EXPENSE, TEXT, None)
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
    grammar = GROUNDED.formatting_grammar(EXPENSE, TEXT, None)
    assert (
        grammar != EXPENSE.grammar_body
        and PLAIN.formatting_grammar(EXPENSE, TEXT, None) is EXPENSE.grammar_body
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


def test_candidates_read_relative_dates_against_the_field_the_judge_reads() -> None:
    """`reference_date_field` names the meta field the judge derives "yesterday" from; the grammar's
    candidates must be derived from the same one, or a date the judge accepts is never proposed."""
    options = ExtractOptions(grounded_decoding=True, reference_date_field="sent")
    text, meta = "Taxi to the airport yesterday, 35 EUR, Tom", {"sent": "2024-03-04"}
    assert "2024-03-03" in options.formatting_grammar(EXPENSE, text, meta)["properties"]["date"]["enum"]
    unanchored = options.formatting_grammar(EXPENSE, text, {"received": "2024-03-04"})
    assert "2024-03-03" not in unanchored["properties"]["date"].get("enum", [])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["one-pass", "one-pass-reasoning"])
def test_single_pass_modes_choose_only_candidates_too(local_engine, mode: str) -> None:
    """Grounded decoding is a property of the call that writes the JSON, whichever mode makes it."""
    from formwork.tasks.extract import extract_record

    options = ExtractOptions(grounded_decoding=True, mode=mode, max_attempts=1)
    outcome = extract_record(1, TEXT, EXPENSE, local_engine, local_engine, options)
    written = json.loads(outcome.calls[-1].output)
    allowed = GROUNDED.formatting_grammar(EXPENSE, TEXT, None)["properties"]
    assert written["amount"] in allowed["amount"]["enum"] and written["date"] in allowed["date"]["enum"]
    assert written["who"] in allowed["who"]["enum"]
    assert not [e for e in outcome.verdict.errors if "does not appear in the text" in e], (
        outcome.verdict.errors
    )
