"""Every mode on the real embedded model, two records, small budgets: same Outcome, judged the same way."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines.base import Completion, Sampling
from formwork.tasks.extract import extract_record
from formwork.tasks.modes import MODES, REASONING_FIELD, with_reasoning_field
from formwork.tasks.parsing import STEPS
from formwork.tasks.presets import PRESETS, guard, preset, run_warning

GOLD = Path(__file__).parent.parent / "examples" / "gold" / "expense.jsonl"
TEXTS = [json.loads(line)["text"] for line in GOLD.read_text().splitlines()[:2]]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_returns_a_judged_outcome(local_engine, mode: str) -> None:
    schema = load_schema("expense")
    options = ExtractOptions(mode=mode, reasoning_max_tokens=48, max_attempts=1)
    for number, text in enumerate(TEXTS, start=1):
        outcome = extract_record(number, text, schema, local_engine, local_engine, options)
        assert outcome.attempts == 1 and outcome.calls, mode
        passes = {"two-pass": ["reasoning", "formatting"],
                  "two-readings": ["formatting", "reasoning", "formatting"]}  # fmt: skip
        assert [c.pass_name for c in outcome.calls] == passes.get(mode, ["formatting"])
        if mode == "two-readings":  # the notes-free reading first, then both readings kept for the policy
            assert outcome.calls[0].judged["reading"] == "notes-free"
            assert set(outcome.readings) == {"two-pass", "notes-free"}
        assert outcome.formatting_finish == outcome.calls[-1].finish_reason
        verdict = outcome.verdict
        if verdict.status == "ok":  # ok means what it means in production: valid against the schema
            assert schema.validator.is_valid(verdict.data)
            assert REASONING_FIELD not in verdict.data
        if mode != "prompt-json" and outcome.formatting_finish == "stop":
            assert verdict.data is not None  # constrained modes always parse
        steps = [c.parse_step for c in outcome.calls]
        if mode == "prompt-json":
            assert len(steps) == 1 and steps[0] in STEPS
        else:
            assert steps == [None] * len(outcome.calls)


def test_reasoning_field_comes_first_and_is_required() -> None:
    body = with_reasoning_field(load_schema("expense").body)
    assert next(iter(body["properties"])) == REASONING_FIELD
    assert body["required"][0] == REASONING_FIELD
    assert REASONING_FIELD not in load_schema("expense").body["properties"]  # the original is untouched


def test_unknown_mode_is_refused(local_engine) -> None:
    with pytest.raises(ValueError, match="mode 'three-pass' is not a single-pass mode"):
        extract_record(1, "x", load_schema("expense"), local_engine, local_engine,
                       ExtractOptions(mode="three-pass"))  # fmt: skip


def test_chat_preset_is_the_published_one_and_the_guard_forces_greedy() -> None:
    chat = preset("chat", 100, seed=7)
    assert (chat.temperature, chat.top_p, chat.top_k, chat.repetition_penalty, chat.no_repeat_ngram_size) == (
        0.75, 0.9, 40, 1.12, 3,
    )  # fmt: skip
    assert guard(chat) == Sampling(max_tokens=100, seed=7)
    assert guard(chat, allow_chat=True) == chat
    assert guard(replace(PRESETS["greedy"], top_p=0.5)).top_p == 0.5  # greedy: top_p changes nothing
    assert run_warning("chat", allow_chat=True) and not run_warning("chat", allow_chat=False)
    assert not run_warning("greedy", allow_chat=True)
    with pytest.raises(ValueError, match="unknown sampling preset"):
        preset("creative", 10)


class SameAnswer:
    """Stands in for greedy decoding that writes the same rejected answer whatever it is told."""

    model, max_concurrency = "same-answer", 1

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages, sampling, schema=None) -> Completion:
        self.calls += 1
        data = {
            "who": "Zed",
            "date": None,
            "amount": 12,
            "currency": "EUR",
            "category": "meals",
            "project": None,
        }
        return Completion(json.dumps(data), "stop", 10, 10, 0.01, self.model)

    def count_tokens(self, text: str) -> int:
        return len(text) // 4


def test_a_greedy_retry_that_would_repeat_the_same_prompt_is_not_made() -> None:
    engine = SameAnswer()
    options = ExtractOptions(mode="one-pass", max_attempts=3)
    outcome = extract_record(1, "Lunch 12 EUR", load_schema("expense"), engine, engine, options)  # type: ignore[arg-type]
    assert outcome.verdict.status != "ok" and any("Zed" in e for e in outcome.verdict.errors)
    assert engine.calls == 2 and outcome.attempts == 2  # the first answer, one retry told why; no third copy
