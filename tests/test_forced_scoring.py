"""Teacher-forced scoring on the real bundled model: the embedded engine scores a given answer under the
grammar mask exactly as it would have reported it had it written that answer itself."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import date

import pytest

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import load_schema
from formwork.tasks.confidence.probability import field_confidences
from formwork.tasks.engines.base import RequestRejected, Sampling
from formwork.tasks.grounding.candidates import grounded_body
from formwork.tasks.modes import single_pass_messages

pytestmark = pytest.mark.slow

EXPENSE = load_schema("expense")
TEXT = "Taxi from the airport to the hotel, 35 EUR, March 3rd 2024 (Tom)"
MESSAGES = single_pass_messages(EXPENSE, TEXT, "one-pass")


def written(data: dict) -> str:
    """JSON as the grammar writes it: compact, keys in the schema's order, characters unescaped."""
    return json.dumps(data, ensure_ascii=False)  # spaced, as the grammar writes JSON


@pytest.fixture(scope="module")
def greedy(local_engine):
    budget = format_budget(EXPENSE.grammar_body)
    return local_engine.complete(MESSAGES, Sampling(max_tokens=budget), EXPENSE.grammar_body)


def test_the_greedy_answer_scores_exactly_what_the_engine_reported(local_engine, greedy) -> None:
    scored = local_engine.score(MESSAGES, greedy.text, EXPENSE.grammar_body)
    assert greedy.finish_reason == scored.finish_reason == "stop"
    assert scored.text == greedy.text
    assert [p for p, _ in scored.token_logprobs] == [p for p, _ in greedy.token_logprobs]
    assert [lp for _, lp in scored.token_logprobs] == pytest.approx(
        [lp for _, lp in greedy.token_logprobs], abs=1e-9
    )
    data = json.loads(greedy.text)
    reported = field_confidences(EXPENSE.checked_body, data, greedy)
    assert reported and field_confidences(EXPENSE.checked_body, data, scored) == pytest.approx(reported)


def test_a_forced_unlikely_value_gets_a_lower_confidence(local_engine, greedy) -> None:
    data = json.loads(greedy.text)
    other = next(label for label in ("JPY", "CHF") if label != data["currency"])
    forced = data | {"currency": other}
    scored = local_engine.score(MESSAGES, written(forced), EXPENSE.grammar_body)
    assert scored.text == written(forced)
    before = field_confidences(EXPENSE.checked_body, data, greedy)["currency"]
    after = field_confidences(EXPENSE.checked_body, forced, scored)["currency"]
    assert after < before
    assert after < 0.5  # the model's own choice held the greater share of this enum


@pytest.mark.parametrize(
    ("answer", "where"),
    [
        ('{"who": "Tom", "date": null, "amount": 35, "currency": "XYZ"', "XYZ"),  # a label the enum lacks
        ('{"who":"Tom"}', '"Tom"'),  # compact: the spaced grammar never writes it
        ('{"date": null, "who": "Tom"}', 'date"'),  # keys out of the schema's order
        ('{"who": "Tom", "date": null, "amount": 35', "the end"),  # not finished: no end token allowed
    ],
)
def test_an_answer_the_grammar_does_not_allow_is_refused(local_engine, answer, where) -> None:
    with pytest.raises(RequestRejected, match="does not allow") as refused:
        local_engine.score(MESSAGES, answer, EXPENSE.grammar_body)
    assert where in str(refused.value)
    assert not refused.value.retryable


def test_the_records_grounded_grammar_scores_its_candidates_and_refuses_the_rest(local_engine) -> None:
    text = "Taxi for 2 people from the airport, 35 EUR, March 3rd 2024 (Tom)"
    messages = single_pass_messages(EXPENSE, text, "one-pass")
    grounded = grounded_body(EXPENSE.grammar_body, text, date(2024, 3, 5), checked=EXPENSE.checked_body)
    base = {"who": "Tom", "date": "2024-03-03", "amount": 35, "currency": "EUR", "category": "transport"}
    base |= {"project": None}
    wrong_in_text = written(base | {"amount": 2})  # another number the text holds
    scored = local_engine.score(messages, wrong_in_text, grounded)
    assert 0 < field_confidences(EXPENSE.checked_body, base | {"amount": 2}, scored)["amount"] < 1
    for outside in (47, 2024):  # not in the text; only a part of its date
        with pytest.raises(RequestRejected, match=r"\"amount\": 2?' it cannot write"):  # 2 is a candidate
            local_engine.score(messages, written(base | {"amount": outside}), grounded)


def test_a_refused_score_leaves_the_calls_decoding_beside_it_unchanged(local_engine, greedy) -> None:
    budget = format_budget(EXPENSE.grammar_body)

    def generate() -> str:
        return local_engine.complete(MESSAGES, Sampling(max_tokens=budget), EXPENSE.grammar_body).text

    def refused() -> str:
        with pytest.raises(RequestRejected):
            local_engine.score(MESSAGES, greedy.text.replace('"who": ', '"who":'), EXPENSE.grammar_body)
        return "refused"

    with ThreadPoolExecutor(3) as pool:
        results = [f.result() for f in [pool.submit(generate), pool.submit(refused), pool.submit(generate)]]
    assert results == [greedy.text, "refused", greedy.text]
