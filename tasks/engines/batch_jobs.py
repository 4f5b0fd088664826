"""The embedded engine's batch records: a call (`Job`), a KV-cache sequence (`Slot`), and timings.

They live apart from the decode loop (`tasks.engines.batch_decoder`) so that the loop reads as the
scheduling it is; the records only hold state and answer one question each (`Slot.fit`).
"""

from __future__ import annotations

import codecs
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from formwork.tasks.engines.base import EngineError, FinishReason, Sampling


@dataclass(eq=False)
class Job:
    """One call: its prompt and settings in, its tokens, pieces and finish reason out."""

    prompt: list[int]
    budget: int
    sampling: Sampling
    matcher: Any = None  # an XGrammar matcher for constrained calls
    forced: bytes | None = None  # teacher forcing: the answer to write instead of picking (forcing.py)
    written: int = 0  # bytes written so far: where a forced job is in `forced`
    output: list[int] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    others: list[list[tuple[int, float]]] = field(default_factory=list)  # per step, other allowed tokens
    rivals: list[float] = field(default_factory=list)  # per step, the likeliest token writing something else
    nulls: list[float] = field(default_factory=list)  # per step, the tokens writing null where a value begins
    finish: FinishReason | None = None
    error: EngineError | None = None
    started: float = 0.0
    finished: float = 0.0
    next_token: int = -1  # picked, not yet evaluated
    done: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.sampling.seed)
        self.text = codecs.getincrementaldecoder("utf-8")(errors="replace")


@dataclass
class Slot:
    """One sequence of the context: the tokens in its KV cache and the job decoding there, if any."""

    index: int
    tokens: list[int] = field(default_factory=list)
    job: Job | None = None
    freed: int = 0  # when it was last freed, in jobs finished; smaller means longer ago
    prompt_length: int = 0  # of the last job's prompt, the first tokens of `tokens`
    held: bool = False  # the last job was free text: kept for the call that continues it

    def fit(self, prompt: list[int]) -> tuple[bool, int, int]:
        """How well a new prompt fits here; the largest wins (eligible, shared prefix, age)."""
        shared = shared_prefix(self.tokens, prompt)
        return (not self.held or shared >= self.prompt_length, shared, -self.freed)


@dataclass
class Timings:
    """Where the decode thread's time went, summed over its life (the benchmarks read it)."""

    prefill_s: float = 0.0
    forward_s: float = 0.0  # batched decode steps
    mask_s: float = 0.0  # XGrammar fill + applying the mask
    steps: int = 0
    tokens: int = 0
    reused_tokens: int = 0  # prompt tokens found in a slot's cache, not evaluated again
    widest: int = 0  # the most sequences decoded in one step


def shared_prefix(cached: list[int], prompt: list[int]) -> int:
    """How many leading tokens the two lists have in common."""
    count = 0
    for old, new in zip(cached, prompt, strict=False):
        if old != new:
            break
        count += 1
    return count
