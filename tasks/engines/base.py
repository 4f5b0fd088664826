"""The one Engine protocol that both passes speak, and the errors every engine raises.

An engine turns chat messages into text. The reasoning pass calls it with no schema (free text); the
formatting pass calls it with a JSON Schema, and the engine must constrain decoding to that schema
(XGrammar in-process, or vLLM's structured outputs over HTTP). Everything else (prompts, validation,
status, persistence) lives outside the engines, so a new engine is one more module and nothing else.

Errors are mapped at the engine boundary into a small hierarchy that says whether a retry can help::

    EngineError                 anything an engine raises; carries `retryable` and a `hint`
    ├── EngineUnavailable       retryable: refused connection, timeout, 429, 5xx, a server that died
    └── RequestRejected         not retryable: the request itself is wrong (a schema the grammar
                                engine refuses, a prompt longer than the context)

The flag drives both Prefect's `retry_condition_fn` and the retry queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

FinishReason = Literal["stop", "length", "abort", "error"]
Message = dict[str, str]
JsonSchema = dict[str, Any]
LogprobMode = Literal["masked", "renormalised", "none"]
TopStep = tuple[str, float, tuple[tuple[str, float], ...]]  # token text, logprob, the server's top list


@dataclass(frozen=True)
class PreMask:
    """Logprobs a server reported before its grammar mask (llama.cpp's and llama-cpp-python's), with
    the schema its grammar was built from: what `tasks.confidence.renormalise` needs to renormalise over
    the values that schema allows. The top lists keep the server's order, which shows its collisions."""

    steps: tuple[TopStep, ...]
    schema: JsonSchema


@dataclass(frozen=True)
class Sampling:
    """Sampling settings for one call.

    The defaults are the formatting pass's safe settings: greedy, no repetition penalty and no n-gram
    ban, because chat-style penalties silently forbid the tokens a schema needs (a repeated `"`, `,`,
    or a key name). The reasoning pass may raise temperature; it has no grammar to break.
    """

    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0
    repetition_penalty: float = 1.0
    top_k: int = 0  # 0: off
    no_repeat_ngram_size: int = 0  # 0: off; n > 0 forbids repeating any n-gram of the output


@dataclass(frozen=True)
class Completion:
    """What one model call produced, told truthfully: the finish reason and token counts are data."""

    text: str
    finish_reason: FinishReason
    prompt_tokens: int
    completion_tokens: int
    duration_s: float
    model: str
    # Constrained calls on the embedded engine: each output token's text and its log-probability
    # under the grammar-masked distribution at temperature 1 (the pieces join to `text`).
    token_logprobs: tuple[tuple[str, float], ...] = ()
    # beside them, per token, the log-probability of the likeliest allowed token that writes something
    # else there (-inf: none seen): where a rival value could have begun (the runner-up's bound)
    token_rivals: tuple[float, ...] = ()
    # and the log-probability of the other tokens that write `null` where the next value begins (-inf:
    # none seen): the value-or-null decision apart from the choice among values
    token_nulls: tuple[float, ...] = ()
    engine: str = "local"  # the engine kind: local, vllm, openai:<dialect>; stored beside confidences
    pre_mask: PreMask | None = None  # a server whose logprobs come before the mask: renormalised later


# What a constrained reply's logprobs give a Completion: token_logprobs, token_rivals, token_nulls.
Masked = tuple[tuple[tuple[str, float], ...], tuple[float, ...], tuple[float, ...]]


@dataclass
class EngineError(Exception):
    """Base of every engine failure; `retryable` says whether the same call could succeed later."""

    message: str
    retryable: bool = False
    hint: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


@dataclass
class EngineUnavailable(EngineError):
    """The engine could not answer now (connection refused, timeout, overload); try again later."""

    retryable: bool = True


@dataclass
class RequestRejected(EngineError):
    """The engine refused this request as such; sending it again will fail the same way."""

    retryable: bool = False


@runtime_checkable
class Engine(Protocol):
    """Messages + sampling (+ a JSON Schema for the formatting pass) -> a Completion.

    `model` names the model for the call rows. `max_concurrency` tells the pipeline how many calls it
    may have in flight on this engine at once (the embedded engine's slots, a server's request limit).
    Implementations must be safe to call from `max_concurrency` threads at once.
    """

    model: str
    max_concurrency: int

    def complete(
        self, messages: list[Message], sampling: Sampling, schema: JsonSchema | None = None
    ) -> Completion: ...

    def close(self) -> None: ...


def require(module: str, extra: str) -> Any:
    """Import a heavy optional dependency only when an engine needs it, with a message that says how."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{module} is needed for this engine: pip install 'formwork[{extra}]' (or run `make install`)"
        ) from exc
