"""The embedded engine's sampling math on one row of logits: penalty, n-gram ban, temperature, top-k,
top-p, pick; and the log-probability of a token under the grammar-masked distribution.

Kept apart from the decode loop so each step can be tested on hand-made logits. The order follows
transformers' logits processors: repetition penalty, n-gram ban, then temperature, top-k and top-p.
Greedy decoding (temperature 0) is the argmax of the penalised, banned logits: the filters that only
reshape a distribution (temperature, top-k, top-p) cannot change it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from formwork.tasks.engines.base import Sampling


def penalise_repeats(logits: np.ndarray, previous: Sequence[int], penalty: float) -> None:
    """CTRL's repetition penalty, in place: each token already written becomes less likely."""
    if penalty == 1.0 or not previous:
        return
    seen = np.unique(np.asarray(previous))
    values = logits[seen]
    logits[seen] = np.where(values > 0, values / penalty, values * penalty)


def banned_by_ngrams(previous: Sequence[int], size: int) -> list[int]:
    """Tokens that would complete an n-gram (`size` tokens) already present in `previous`.

    The same rule as transformers' `no_repeat_ngram_size`: the last `size - 1` tokens are a prefix;
    every token that followed that prefix before is banned. Size 1 bans every token written so far.
    """
    if size <= 0 or len(previous) < size:
        return []
    prefix = list(previous[len(previous) - size + 1 :]) if size > 1 else []
    banned = []
    for start in range(len(previous) - size + 1):
        if list(previous[start : start + size - 1]) == prefix:
            banned.append(previous[start + size - 1])
    return banned


def keep_top_k(logits: np.ndarray, k: int) -> None:
    """In place: every token outside the k most likely gets -inf (k <= 0 or k >= vocabulary: off)."""
    if 0 < k < logits.size:
        cut = np.argpartition(-logits, k - 1)[k:]
        logits[cut] = -np.inf


def keep_top_p(probs: np.ndarray, top_p: float) -> np.ndarray:
    """The smallest set of most likely tokens whose mass reaches `top_p`, renormalised."""
    if top_p >= 1.0:
        return probs
    order = np.argsort(-probs, kind="stable")
    keep = order[: int(np.searchsorted(np.cumsum(probs[order]), top_p)) + 1]
    trimmed = np.zeros_like(probs)
    trimmed[keep] = probs[keep]
    return trimmed / trimmed.sum()


def pick(logits: np.ndarray, sampling: Sampling, previous: Sequence[int], rng: np.random.Generator) -> int:
    """The next token for these logits (modified in place); `previous` is the output so far."""
    penalise_repeats(logits, previous, sampling.repetition_penalty)
    banned = banned_by_ngrams(previous, sampling.no_repeat_ngram_size)
    if banned and np.isfinite(np.delete(logits, banned)).any():
        logits[banned] = -np.inf  # unless the ban would leave nothing the grammar allows: then it yields
    if sampling.temperature <= 0:
        return int(np.argmax(logits))
    keep_top_k(logits, sampling.top_k)
    scaled = (logits - logits.max()) / sampling.temperature
    probs = np.exp(scaled)
    probs = keep_top_p(probs / probs.sum(), sampling.top_p)
    return int(rng.choice(len(probs), p=probs))


def masked_logprob(masked_logits: np.ndarray, token: int) -> float:
    """log softmax(masked_logits)[token] at temperature 1; masked-out tokens hold -inf and weigh 0."""
    top = float(masked_logits.max())
    total = float(np.exp(masked_logits - top).sum())
    return float(masked_logits[token]) - top - float(np.log(total))


def masked_alternatives(
    masked_logits: np.ndarray, token: int, logprob: float, k: int
) -> list[tuple[int, float]]:
    """The `k` most likely other allowed tokens and their log-probabilities (`logprob` is the chosen
    token's, which fixes the normaliser); none when the chosen token took all the mass."""
    if logprob > -1e-9:
        return []
    normaliser = float(masked_logits[token]) - logprob
    top = np.argpartition(-masked_logits, k)[: k + 1]
    return [
        (int(t), float(masked_logits[t]) - normaliser)
        for t in top
        if t != token and np.isfinite(masked_logits[t])
    ][:k]
