"""Retries inside a run, on the real embedded model; one injected fault where no real model obliges."""

from __future__ import annotations

import json

import pytest

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines.base import Completion, EngineUnavailable
from formwork.tasks.extract import extract_record, looping

pytestmark = pytest.mark.slow
CHAT = load_schema("chat_tag")


def test_length_stop_is_retried_with_a_doubled_budget_never_the_truncated_text(local_engine) -> None:
    options = ExtractOptions(reasoning_max_tokens=200, format_max_tokens=3, max_attempts=3)
    outcome = extract_record(1, "Anna: we won the finals!!!", CHAT, local_engine, local_engine, options)
    formatting = [c for c in outcome.calls if c.pass_name == "formatting"]
    reasoning = [c for c in outcome.calls if c.pass_name == "reasoning"]
    assert [c.max_tokens for c in formatting] == [3, 6, 12]
    assert all(c.finish_reason == "length" for c in formatting)
    assert [c.attempt for c in formatting] == [1, 2, 3] and outcome.attempts == 3
    # notes are redone, with twice the budget, only when they were cut and were not looping
    for earlier in reasoning[:-1]:
        assert earlier.finish_reason == "length" and not looping(earlier.output)
    last = reasoning[-1]
    assert last.attempt == 3 or last.finish_reason == "stop" or looping(last.output)
    assert [c.max_tokens for c in reasoning] == [200, 400, 800][: len(reasoning)]
    assert outcome.verdict.status == "failed" and outcome.formatting_finish == "length"


class IgnoresTheGrammarOnce:
    """A formatter that answers off-schema first, as a server that ignored the schema would."""

    model, max_concurrency = "fault-injector", 1

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, messages, sampling, schema=None) -> Completion:
        self.prompts.append(messages[-1]["content"])
        emotion = "excited" if len(self.prompts) == 1 else "happy"
        text = json.dumps({"speaker": "Anna", "emotion": emotion, "reply": "Congratulations!"})
        return Completion(text, "stop", 50, 20, 0.01, self.model, ((text, 0.0),))  # sure of its choices


def test_validation_errors_are_fed_back_and_the_notes_reused(local_engine) -> None:
    formatter = IgnoresTheGrammarOnce()
    options = ExtractOptions(reasoning_max_tokens=200, max_attempts=3)
    outcome = extract_record(1, "Anna: we won the finals!!!", CHAT, local_engine, formatter, options)
    assert outcome.verdict.status == "ok" and outcome.attempts == 2
    assert "emotion: 'excited' is not one of" in formatter.prompts[1]
    assert "excited" not in formatter.prompts[0]
    notes = [c for c in outcome.calls if c.pass_name == "reasoning"]
    if notes[0].finish_reason == "stop":
        assert len(notes) == 1


class DeadServer:
    model, max_concurrency = "dead", 1

    def complete(self, messages, sampling, schema=None) -> Completion:
        raise EngineUnavailable("connection refused", hint="is the server running?")


def test_engine_error_fails_the_record_as_retryable_and_logs_the_call() -> None:
    outcome = extract_record(1, "Anna: hi", CHAT, DeadServer(), DeadServer(), ExtractOptions())
    assert outcome.verdict.status == "failed" and outcome.retryable
    assert "engine error: connection refused" in outcome.verdict.errors[0]
    assert [(c.pass_name, c.finish_reason, c.error) for c in outcome.calls] == [
        ("reasoning", "error", "connection refused (is the server running?)")
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The amount is 12 EUR. " * 6, True),
        ("Maria paid 42.80 USD for lunch with Acme on 2024-03-14; the project is Apollo.", False),
        ("ab" * 10, False),  # too short to judge
    ],
)
def test_looping_notes_are_recognised(text: str, expected: bool) -> None:
    assert looping(text) is expected
