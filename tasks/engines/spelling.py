"""The probability of what was written, not of how it was cut into tokens.

A grammar allows every tokenization of an allowed value: "Blackwood" may come as "Black"+"wood" or
"B"+"lack"+"wood", so even a value that is the only one allowed is not written by forced tokens. On
the bundled model, an enum with a single value of four words came back with its chosen tokens' product
at 0.17. That product is the probability of one tokenization, and a confidence built on it would punish
long values for nothing. So each step counts the mass of every allowed token that spells the same next
characters (a prefix of what the output goes on to write), not the chosen token alone: a step where
only the cut differs costs nothing, and the product over a value approximates the probability of its
characters among all the values the grammar allowed. The alternatives are the top few of the masked
distribution at each step (`SPELLINGS`); the tail left out is a few tokens' worth of mass at most.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

SPELLINGS = 10  # masked alternatives kept per step: the embedded engine's top-k, vLLM's top_logprobs

Step = tuple[bytes, float, Sequence[tuple[bytes, float]]]  # chosen bytes, its logprob, the others


def spelled_logprobs(steps: Sequence[Step]) -> list[float]:
    """Per step, log of the mass of the chosen token and of every other one that writes the same bytes
    next; `others` must not hold the chosen token itself. Capped at 0 (float rounding)."""
    written = b"".join(chosen for chosen, _, _ in steps)
    at, result = 0, []
    for chosen, logprob, others in steps:
        rest = written[at:]
        same = [lp for raw, lp in others if raw and rest.startswith(raw)]
        spelled = math.log(math.exp(logprob) + sum(map(math.exp, same))) if same else logprob
        result.append(min(0.0, spelled))
        at += len(chosen)
    return result
