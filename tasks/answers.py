"""A model's answer kept so that a run killed before its record was stored need not pay for it again.

A call is stored the moment it is answered (db.writer's `EarlyCalls`), with what a later run needs to
take its answer instead of asking again: `request_key` names the request (model, pass, prompt,
sampling and grammar: the same key asks the same question of the same model), and `as_payload` keeps
the answer whole, with the token log-probabilities the judge reads its confidences from, so a reused
answer is judged exactly as it was. Once the record's result is stored the payload is dropped.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from formwork.tasks.engines.base import Completion, JsonSchema, Message, Sampling


def request_key(model: str, pass_name: str, messages: list[Message], sampling: Sampling,
                schema: JsonSchema | None) -> str:  # fmt: skip
    """A stable name for one request: two calls with the same key get the same answer from a greedy
    engine (and, sampled, the same seed)."""
    asked = {"model": model, "pass": pass_name, "messages": messages, "sampling": vars(sampling),
             "schema": schema}  # fmt: skip
    return hashlib.sha256(json.dumps(asked, sort_keys=True, default=str).encode()).hexdigest()[:24]


def as_payload(done: Completion) -> dict[str, Any] | None:
    """The answer as JSON the database holds; None where it cannot be replayed as it came (a server's
    pre-mask log-probabilities, which are renormalised against their schema later)."""
    if done.pre_mask is not None:
        return None
    return {
        "text": done.text, "finish_reason": done.finish_reason, "prompt_tokens": done.prompt_tokens,
        "completion_tokens": done.completion_tokens, "duration_s": done.duration_s, "model": done.model,
        "engine": done.engine, "token_logprobs": [[piece, _finite(p)] for piece, p in done.token_logprobs],
        "token_rivals": [_finite(p) for p in done.token_rivals],
        "token_nulls": [_finite(p) for p in done.token_nulls],
    }  # fmt: skip


def from_payload(payload: dict[str, Any]) -> Completion:
    """The stored answer as the engine gave it."""
    return Completion(
        payload["text"], payload["finish_reason"], payload["prompt_tokens"], payload["completion_tokens"],
        payload["duration_s"], payload["model"],
        token_logprobs=tuple((piece, _infinite(p)) for piece, p in payload["token_logprobs"]),
        token_rivals=tuple(_infinite(p) for p in payload["token_rivals"]), engine=payload["engine"],
        token_nulls=tuple(_infinite(p) for p in payload.get("token_nulls", ())),  # none stored before them
    )  # fmt: skip


def _finite(logprob: float) -> float | None:
    """-inf (no rival seen) as null: JSON, and PostgreSQL's json type, hold no infinity."""
    return None if math.isinf(logprob) else logprob


def _infinite(logprob: float | None) -> float:
    return -math.inf if logprob is None else logprob
