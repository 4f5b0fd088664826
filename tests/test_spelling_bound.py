"""A spelled confidence never overstates the model's probability of the value (issue 26, defect 5).

Each case states a token distribution: a small tree of tokens (every substring of up to three
characters of the allowed values' JSON) over a few rival values, with stated probabilities at every
state. The true probability of a value is the sum over every tokenization that writes it, computed by
enumeration. The greedy path is then reported through both engines' code paths, the embedded
engine's (masked logits -> `masked_logprob`, `masked_alternatives`, `spelled_logprobs`, as the batch
decoder does) and vLLM's (`masked_token_logprobs` on a reply's `logprobs.content`), and the judge's
confidence (`field_confidences`) must be no larger than the truth.
"""

from __future__ import annotations

import json
import math
import random
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.tasks.confidence.probability import field_confidences
from formwork.tasks.engines.base import Completion
from formwork.tasks.engines.sampling import masked_alternatives, masked_logprob
from formwork.tasks.engines.spelling import SPELLINGS, spelled_logprobs
from formwork.tasks.engines.vllm_logprobs import MASKED_OUT, masked_token_logprobs

PREFIX = '{"v": '  # forced: one token, probability 1


class Tree:
    """A stated distribution over tokens at every state (what was written after PREFIX)."""

    def __init__(self, rivals: list[str], weights: dict[tuple[str, str], float] | random.Random) -> None:
        self.ends = [json.dumps(v) + "}" for v in rivals]
        self.rivals = rivals
        self.vocab = sorted({e[i:j] for e in self.ends for i in range(len(e)) for j in range(i + 1, i + 4)
                             if j <= len(e)})  # fmt: skip
        self._weights = weights

    @cache  # noqa: B019 (a test's tree lives as long as the test)
    def step(self, state: str) -> dict[str, float]:
        """Token -> probability at `state`: the allowed tokens (those that keep to some value), normalised."""
        allowed = [t for t in self.vocab if any(e.startswith(state + t) for e in self.ends)]
        if isinstance(self._weights, random.Random):
            raw = {t: self._weights.random() ** 3 + 1e-3 for t in allowed}
        else:
            raw = {t: self._weights.get((state, t), 0.0) for t in allowed}
        total = sum(raw.values())
        return {t: w / total for t, w in raw.items() if w > 0}

    @cache  # noqa: B019
    def reach(self, state: str, end: str) -> float:
        """The probability, from `state`, that what is written ends as `end` (every tokenization)."""
        if state == end:
            return 1.0
        return sum(
            p * self.reach(state + t, end) for t, p in self.step(state).items() if end.startswith(state + t)
        )

    def greedy(self) -> list[str]:
        state, path = "", []
        while state not in self.ends:
            token = max(self.step(state).items(), key=lambda item: (item[1], item[0]))[0]
            path.append(token)
            state += token
        return path


def embedded_pieces(tree: Tree, path: list[str]) -> tuple[tuple[str, float], ...]:
    """The embedded engine's path: masked logits over the vocabulary, then the batch decoder's calls."""
    vocab = [PREFIX, *tree.vocab]
    steps, state = [(PREFIX.encode(), 0.0, [])], ""
    for token in path:
        probabilities = tree.step(state)
        logits = np.array([-np.inf] + [math.log(probabilities.get(t, 0.0) or 1e-300) if t in probabilities
                                       else -np.inf for t in tree.vocab])  # fmt: skip
        chosen = vocab.index(token)
        logprob = masked_logprob(logits, chosen)
        others = [
            (vocab[t].encode(), lp) for t, lp in masked_alternatives(logits, chosen, logprob, SPELLINGS)
        ]
        steps.append((token.encode(), logprob, others))
        state += token
    spelled = spelled_logprobs(steps).logprobs
    return tuple((raw.decode(), lp) for (raw, _, _), lp in zip(steps, spelled, strict=True))


def vllm_pieces(tree: Tree, path: list[str]) -> tuple[tuple[str, float], ...]:
    """vLLM's path: a chat choice's `logprobs` (top tokens, best first, the chosen among them)."""
    content = [{"bytes": list(PREFIX.encode()), "logprob": 0.0,
                "top_logprobs": [{"bytes": list(PREFIX.encode()), "logprob": 0.0},
                                 {"bytes": [120], "logprob": MASKED_OUT}]}]  # fmt: skip
    state = ""
    for token in path:
        ranked = sorted(tree.step(state).items(), key=lambda item: -item[1])[:SPELLINGS]
        tops = [{"bytes": list(t.encode()), "logprob": math.log(p)} for t, p in ranked]
        content.append({"bytes": list(token.encode()), "logprob": math.log(tree.step(state)[token]),
                        "top_logprobs": tops})  # fmt: skip
        state += token
    return masked_token_logprobs({"content": content}, PREFIX + state)[0]


def reported(tree: Tree, pieces: tuple[tuple[str, float], ...]) -> tuple[str, float]:
    text = "".join(p for p, _ in pieces)
    value = json.loads(text)["v"]
    body = {"type": "object", "properties": {"v": {"enum": tree.rivals}}}
    confidences = field_confidences(body, {"v": value}, Completion(text, "stop", 1, 1, 0.0, "t", pieces))
    return value, confidences["v"]


@settings(max_examples=150, deadline=None)
@given(
    rivals=st.lists(st.text(alphabet="ab", min_size=1, max_size=4), min_size=2, max_size=4, unique=True),
    rng=st.randoms(use_true_random=False),
)
def test_the_reported_confidence_is_never_above_the_true_probability(rivals: list[str], rng) -> None:
    tree = Tree(rivals, rng)
    path = tree.greedy()
    for pieces in (embedded_pieces(tree, path), vllm_pieces(tree, path)):
        value, confidence = reported(tree, pieces)
        truth = tree.reach("", json.dumps(value) + "}")
        assert confidence <= truth + 1e-9, (rivals, path, confidence, truth)


def test_issue_26s_case_a_shorter_token_that_leads_on_to_a_rival_is_not_counted() -> None:
    """At `"`, the model writes `Blackwood"` whole at 0.7 or `B` at 0.2945; after `"B`, `lackwood"` has
    0.3294 and `rown"` the rest. So P(Blackwood) = 0.7 + 0.2945 * 0.3294 = 0.797; counting every token
    that is a prefix of what was written reported 0.7 + 0.2945 = 0.9945, over a 0.99 bound."""
    after_b = 0.097 / 0.2945
    weights = {
        ("", '"'): 1.0,
        ('"', "Bla"): 0.7, ('"', "B"): 0.2945, ('"', "Bro"): 0.0055,
        ('"Bla', "ckw"): 1.0, ('"Blackw', "ood"): 1.0, ('"Blackwood', '"}'): 1.0,
        ('"B', "lac"): after_b, ('"B', "row"): 1 - after_b,
        ('"Blac', "kwo"): 1.0, ('"Blackwo', 'od"'): 1.0, ('"Blackwood"', "}"): 1.0,
        ('"Bro', 'wn"'): 1.0, ('"Brow', 'n"}'): 1.0, ('"Brown"', "}"): 1.0,
    }  # fmt: skip
    tree = Tree(["Blackwood", "Brown"], weights)
    truth = tree.reach("", '"Blackwood"}')
    assert truth == pytest.approx(0.797, abs=1e-4)
    path = tree.greedy()
    assert "".join(path) == '"Blackwood"}'
    for pieces in (embedded_pieces(tree, path), vllm_pieces(tree, path)):
        value, confidence = reported(tree, pieces)
        assert value == "Blackwood" and confidence <= truth
        assert confidence < 0.99  # no longer passes a 0.99 bound


def test_a_token_that_writes_the_whole_value_is_still_counted() -> None:
    """Two spellings that both finish the value: both count, so a sure value is not punished."""
    others = [(b'"ab"}', math.log(0.3)), (b'"a', math.log(0.1))]
    steps = [(b'{"v": ', 0.0, []), (b'"ab"', math.log(0.6), others), (b"}", 0.0, [])]
    spelled = spelled_logprobs(steps).logprobs
    assert math.exp(spelled[1]) == pytest.approx(0.9)  # `"ab"}` decides it too; `"a` does not
