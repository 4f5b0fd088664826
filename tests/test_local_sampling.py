"""The embedded engine's sampling math on hand-made logits: each filter does what it says, no more."""

from __future__ import annotations

import math

import numpy as np
import pytest

from formwork.tasks.engines.base import Sampling
from formwork.tasks.engines.sampling import (
    banned_by_ngrams,
    keep_top_k,
    keep_top_p,
    masked_logprob,
    penalise_repeats,
    pick,
)


def logits(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def test_greedy_is_the_argmax() -> None:
    assert pick(logits(0.1, 3.0, 2.9, -1.0), Sampling(), [], np.random.default_rng(0)) == 1


def test_repetition_penalty_divides_positive_and_multiplies_negative_logits() -> None:
    row = logits(4.0, -2.0, 1.0)
    penalise_repeats(row, [0, 1, 1], 2.0)
    assert row.tolist() == [2.0, -4.0, 1.0]


def test_repetition_penalty_can_change_the_greedy_choice() -> None:
    row = logits(3.0, 2.0)
    assert pick(row, Sampling(repetition_penalty=2.0), [0], np.random.default_rng(0)) == 1


@pytest.mark.parametrize(
    ("previous", "size", "banned"),
    [
        ([5, 6, 7, 5, 6], 3, [7]),  # "5 6" was followed by 7: 5 6 7 may not come again
        ([5, 6, 5, 6, 5], 2, [6, 6]),  # "5" was followed by 6 (twice)
        ([1, 2, 3], 1, [1, 2, 3]),  # size 1: no token may repeat
        ([1, 2, 3], 4, []),  # shorter than the n-gram: nothing to ban
        ([1, 2, 1, 2], 0, []),  # off
        ([9, 8, 7, 6], 2, []),  # no prefix seen before
    ],
)
def test_ngram_ban_matches_transformers_rule(previous: list[int], size: int, banned: list[int]) -> None:
    assert banned_by_ngrams(previous, size) == banned


def test_ngram_ban_steers_greedy_away_from_a_repeat() -> None:
    row = logits(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 9.0, 8.0)  # 7 is the favourite, 8 next
    choice = pick(row, Sampling(no_repeat_ngram_size=3), [5, 6, 7, 5, 6], np.random.default_rng(0))
    assert choice == 8


@pytest.mark.parametrize("temperature", [0.0, 0.75])
def test_an_ngram_ban_that_would_leave_no_allowed_token_yields_to_the_grammar(temperature: float) -> None:
    """The grammar allows only token 7 (the rest masked to -inf); the ban would forbid 7 too."""
    row = np.full(9, -np.inf)
    row[7] = 1.0
    sampling = Sampling(temperature=temperature, no_repeat_ngram_size=3)
    assert pick(row, sampling, [5, 6, 7, 5, 6], np.random.default_rng(0)) == 7


def test_top_k_keeps_exactly_the_k_best() -> None:
    row = logits(1.0, 5.0, 3.0, 4.0, 2.0)
    keep_top_k(row, 2)
    assert np.isfinite(row).tolist() == [False, True, False, True, False]
    untouched = logits(1.0, 2.0)
    keep_top_k(untouched, 0)
    assert np.isfinite(untouched).all()


def test_top_k_one_makes_sampling_greedy() -> None:
    rng = np.random.default_rng(3)
    picks = {pick(logits(1.0, 1.2, 0.9), Sampling(temperature=2.0, top_k=1), [], rng) for _ in range(50)}
    assert picks == {1}


def test_sampling_without_filters_reaches_every_token() -> None:
    rng = np.random.default_rng(3)
    picks = {pick(logits(1.0, 1.2, 0.9), Sampling(temperature=1.0), [], rng) for _ in range(200)}
    assert picks == {0, 1, 2}


def test_top_p_keeps_the_smallest_head_reaching_the_mass() -> None:
    kept = keep_top_p(np.array([0.5, 0.3, 0.15, 0.05]), 0.7)
    assert np.allclose(kept, [0.625, 0.375, 0.0, 0.0])


def test_masked_logprob_is_a_log_softmax_over_the_allowed_tokens() -> None:
    row = logits(1.0, 2.0, -np.inf, 0.5)
    expected = 2.0 - math.log(math.exp(1.0) + math.exp(2.0) + math.exp(0.5))
    assert masked_logprob(row, 1) == pytest.approx(expected)
    total = sum(math.exp(masked_logprob(row, t)) for t in (0, 1, 3))
    assert total == pytest.approx(1.0)
    only = logits(-np.inf, 7.0, -np.inf)
    assert masked_logprob(only, 1) == 0.0


def test_vllm_refuses_the_ngram_ban_it_cannot_apply_before_any_request() -> None:
    from formwork.tasks.engines.base import RequestRejected
    from formwork.tasks.engines.vllm_server import VllmServerEngine

    engine = VllmServerEngine("http://127.0.0.1:9/v1", "any", max_concurrency=1, timeout_s=1)
    try:
        with pytest.raises(RequestRejected, match="no_repeat_ngram_size") as caught:
            engine.complete([{"role": "user", "content": "hi"}], Sampling(no_repeat_ngram_size=3))
        assert caught.value.retryable is False
    finally:
        engine.close()
