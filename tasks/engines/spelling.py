"""The probability of what was written, not of how it was cut into tokens, and never more than it.

A grammar allows every tokenization of an allowed value: "Blackwood" may come as "Black"+"wood" or
"B"+"lack"+"wood", so even a value that is the only one allowed is not written by forced tokens. On
the bundled model, an enum with a single value of four words came back with its chosen tokens' product
at 0.17: the probability of one tokenization, which punishes long values for nothing.

So a step may also count other allowed tokens that spell what the output goes on to write, but only
those that *decide* the value: a token that writes on through the point where every value the chosen
token touches is decided (a string's closing quote, the character after a number). A shorter token
(`"B` of `"Blackwood"`) is not counted: what follows it is another path, whose probabilities nobody
measured, and it may lead on to a rival (`"Brown"`); counting its mass as if it led to the chosen
value overstated it (0.797 reported as 0.9945 on a stated two-step distribution, issue 26).

Why the product over a value's steps is then a lower bound on the model's probability of that value
under the mask: write p_i for the chosen token's probability at step i and A_i for the mass of the
counted others. Each counted token ends a path that has written the value, and all these paths
differ, so P(value) >= p_1...p_n + sum_i p_1...p_(i-1) A_i. The product (p_1 + A_1)...(p_n + A_n)
expands into p_1...p_n plus, for each i, p_1...p_(i-1) A_i times a product of factors each at most 1;
so it is no larger. The alternatives are the top few of the masked distribution (`SPELLINGS`): the
tail left out only lowers the bound.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from typing import NamedTuple

from formwork.tasks.engines.json_spans import decided_at, value_spans

SPELLINGS = 10  # masked alternatives kept per step: the embedded engine's top-k, vLLM's top_logprobs

Step = tuple[bytes, float, Sequence[tuple[bytes, float]]]  # chosen bytes, its logprob, the others
NULL = b"null"
WHITESPACE = b" \t\n\r"


class Spelled(NamedTuple):
    """Per step of a constrained output: what `spelled_logprobs` found (log-probabilities; -inf: none)."""

    logprobs: list[float]  # the chosen token and every other spelling of the same characters
    rivals: list[float]  # the likeliest other token that writes something else
    nulls: list[float]  # the mass of the other tokens that write `null` where the next value begins


def _decision_points(written: bytes) -> list[tuple[int, int]]:
    """(start, decided) byte offsets of every value in the written JSON; [] when it is not JSON."""
    try:
        text = written.decode("utf-8")
    except UnicodeDecodeError:
        return []

    def at(chars: int) -> int:
        return len(text[:chars].encode("utf-8"))

    return [(at(s), at(decided_at(text, (s, e)))) for s, e in value_spans(text).values()]


def _writes_null(raw: bytes, before: bytes) -> bool:
    """`raw`, written where `before` stands before a value, writes (a prefix of) `null` as that value:
    in JSON only null begins with `n`, so even a bare `n` can lead nowhere else."""
    for lead in (before, before.rstrip(WHITESPACE)):
        if raw.startswith(lead):
            tail = raw[len(lead) :].lstrip(WHITESPACE)
            return bool(tail) and (NULL.startswith(tail) or tail.startswith(NULL))
    return False


def spelled_logprobs(steps: Sequence[Step]) -> Spelled:
    """Per step, (1) log of the mass of the chosen token and of every other one that writes the same
    bytes next and on through the point where the values the chosen token touches are decided
    (capped at 0, float rounding), (2) the log-probability of the likeliest other token that writes
    something else there (a rival: the step where another value could begin), -inf where none is
    among the alternatives, and (3) the log of the mass of the other tokens that write `null` where
    the next value begins (the value-or-null decision, apart from the choice among values).
    `others` must not hold the chosen token itself."""
    written = b"".join(chosen for chosen, _, _ in steps)
    points = _decision_points(written)
    starts = sorted(start for start, _ in points)
    at, result, rivals, nulls = 0, [], [], []
    for chosen, logprob, others in steps:
        ends = [decided for start, decided in points if start < at + len(chosen) and decided > at]
        rest = written[at:]
        same = [
            lp for raw, lp in others if ends and raw and rest.startswith(raw) and at + len(raw) >= max(ends)
        ]
        spelled = math.log(math.exp(logprob) + sum(map(math.exp, same))) if same else logprob
        result.append(min(0.0, spelled))
        rivals.append(max((lp for raw, lp in others if raw and not rest.startswith(raw)), default=-math.inf))
        k = bisect_left(starts, at)  # the next value to begin
        before = written[at : starts[k]] if k < len(starts) else None
        null = [math.exp(lp) for raw, lp in others if before is not None and _writes_null(raw, before)]
        nulls.append(math.log(sum(null)) if null else -math.inf)
        at += len(chosen)
    return Spelled(result, rivals, nulls)
