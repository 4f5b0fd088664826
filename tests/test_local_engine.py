"""The embedded engine on the real SmolLM2 model: grammar-constrained output always parses and validates."""

from __future__ import annotations

import json

import pytest

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import RequestRejected, Sampling
from formwork.tasks.prompts import formatting_messages

pytestmark = pytest.mark.slow

INPUTS = {
    "expense": [
        "Lunch with the Acme team on 2024-03-14, paid $42.80 by Maria. Bill to project Apollo.",
        "Taxi from the airport to the hotel, 35 EUR, March 3rd 2024 (Tom)",
        "hotel 2 nights Berlin 2024-05-20 €310 — Priya, conference trip",
        "Bought a new keyboard for the office: £59.99 on 12 Jan 2024",
        "6月3日和客户吃晚饭，花了480元，项目：星河",
        "出租车 56 元 2024年7月8日 王伟",
    ],
    "contact": [
        "Best regards,\nJane Doe\nHead of Data, Northwind Ltd\njane.doe@northwind.io | +44 20 7946 0958",
        "-- \nCarlos Ruiz · Acme Corp · carlos@acme.com",
        "Thanks! Sent from my phone",
        "李明 | 星河科技 | liming@xinghe.cn | 138-0013-8000",
        "Dr. Aiko Tanaka\nTokyo Institute of Robotics\ntel. +81 3 1234 5678",
        "ping me at sam@example.org — Sam",
    ],
    "chat_tag": [
        "Anna: I can't believe we won the finals!!!",
        "Bob: the deploy failed again and nobody told me",
        "I'm scared of the dentist tomorrow",
        "小红：今天下雨了，心情有点低落",
        "Okay, see you at 5.",
        "Mike: WHAT? You sold the car??",
    ],
    "receipt": [
        "CAFE LUNA 2024-05-02\n2x Espresso 5.00\n1x Croissant 2.50\nTOTAL EUR 7.50",
        "Walmart receipt: milk $3.49, bread $2.99, total $6.48",
    ],
    "shopping_list": [
        "2 apples, a loaf of bread, 6 eggs",
        "need milk x3 and coffee from Lidl",
        "买三个苹果和两瓶牛奶",
        "batteries (4), tape, 10 envelopes",
        "nothing needed this week",
        "pasta 2, tomatoes 5, basil, parmesan — Whole Foods",
    ],
}
CASES = [(name, text) for name, texts in INPUTS.items() for text in texts]


@pytest.mark.parametrize(("schema_name", "text"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_formatting_pass_output_parses_and_validates(local_engine, schema_name: str, text: str) -> None:
    schema = load_schema(schema_name)
    budget = format_budget(schema.body)
    done = local_engine.complete(formatting_messages(schema, text, notes=text), Sampling(budget), schema.body)
    if done.finish_reason == "length":  # a runaway number (the 135M model on "出租车 56 元"): the grammar
        assert done.completion_tokens == budget  # bounds no digit count, so the ceiling is what stops it
        return
    assert done.finish_reason == "stop", done
    assert 0 < done.completion_tokens < budget and done.prompt_tokens > 0
    data = json.loads(done.text)
    problems = [e.message for e in schema.validator.iter_errors(data) if e.validator != "format"]
    assert problems == [], (done.text, problems)


def test_at_least_twenty_varied_inputs_some_chinese() -> None:
    assert len(CASES) >= 20
    assert sum(any("\u4e00" <= ch <= "\u9fff" for ch in text) for _, text in CASES) >= 4


def test_tiny_budget_stops_at_length_and_says_so(local_engine) -> None:
    schema = load_schema("expense")
    done = local_engine.complete(
        formatting_messages(schema, "Taxi 20 EUR", "Taxi 20 EUR"), Sampling(4), schema.body
    )
    assert (done.finish_reason, done.completion_tokens) == ("length", 4)
    with pytest.raises(json.JSONDecodeError):
        json.loads(done.text)


def test_free_text_pass_reports_tokens_and_finish_truthfully(local_engine) -> None:
    messages = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    cut = local_engine.complete(messages, Sampling(max_tokens=8, temperature=0.7, seed=1))
    assert (cut.finish_reason, cut.completion_tokens) == ("length", 8) and cut.text
    short = local_engine.complete([{"role": "user", "content": "Say hi."}], Sampling(max_tokens=200))
    assert short.finish_reason == "stop" and short.completion_tokens < 200


def test_same_seed_same_text_when_sampling(local_engine) -> None:
    messages = [{"role": "user", "content": "Name a colour."}]
    first, second = (local_engine.complete(messages, Sampling(12, temperature=1.0, seed=7)) for _ in range(2))
    assert first.text == second.text


def test_prompt_longer_than_the_context_is_rejected_not_retryable(local_engine) -> None:
    messages = [{"role": "user", "content": "word " * 6000}]
    with pytest.raises(RequestRejected, match="does not fit the context") as caught:
        local_engine.complete(messages, Sampling(8))
    assert caught.value.retryable is False
