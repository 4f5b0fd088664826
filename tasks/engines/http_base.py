"""What every OpenAI-compatible server engine shares: one connection pool, error mapping, redaction.

The vLLM engine (`vllm_server`) and the engine for any other OpenAI-compatible server (`openai_server`)
differ only in how a request says "constrain to this schema" and in what their logprobs mean; the
transport is the same and lives here once:

- one `httpx.Client` per engine, thread-safe, with `max_concurrency` keep-alive connections; `timeout_s`
  bounds each wait (a non-streamed completion sends nothing until it is done, so the read timeout is
  the per-request limit);
- the API key as a Bearer header, registered with `redact` so that no message ever shows it;
- errors mapped at the boundary (see `base.py`): refused connection, timeout, 408, 429, 5xx, a garbled
  reply -> EngineUnavailable; any other 4xx -> RequestRejected carrying the server's own message;
- the start-up probe's schema: an enum that the probe's question makes a model answer in free text, so
  only a server that really constrains can answer inside it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

from formwork.tasks.engines.base import (
    Completion,
    EngineError,
    EngineUnavailable,
    FinishReason,
    JsonSchema,
    Masked,
    PreMask,
    RequestRejected,
    Sampling,
)
from formwork.tasks.redact import redact, register_secret

PROBE_SCHEMA: JsonSchema = {
    "title": "formwork_probe",
    "type": "object",
    "properties": {"answer": {"enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
PROBE_QUESTION = [{"role": "user", "content": "Is water wet? Say what you think in one sentence."}]
_FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length", "abort": "abort"}


@dataclass(frozen=True)
class ServerInfo:
    """What `check()` found, for the start-up log line and `formwork doctor`."""

    base_url: str
    version: str
    model: str
    served: tuple[str, ...]
    dialect: str = "vllm"
    logprob_mode: str = "masked"  # masked | renormalised | none
    control_tokens: str = ""  # where the control tokens broken in a record's text come from


def refuse_ngram_ban(sampling: Sampling) -> None:
    """No server has the embedded engine's n-gram ban: refuse it rather than silently drop it."""
    if sampling.no_repeat_ngram_size > 0:
        raise RequestRejected(
            f"no_repeat_ngram_size={sampling.no_repeat_ngram_size}: a server has no n-gram ban",
            hint="use the embedded engine for it, or set no_repeat_ngram_size=0",
        )


def probe_answer(text: str) -> object:
    """The probe reply's `answer`, or None when the reply is not the probe's JSON object."""
    try:
        return json.loads(text).get("answer")
    except (ValueError, AttributeError):
        return None


class HttpEngine:
    """One OpenAI-compatible server at `base_url` (ending in /v1), callable from many threads at once."""

    kind = "http"

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        max_concurrency: int = 8,
        timeout_s: float = 120.0,
        api_key: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.root = self.base_url.removesuffix("/v1")
        self.model = model or ""
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.context_window: int | None = None  # the server's max_model_len, read with the model list
        self.vocabulary: int | None = None  # the model's vocabulary size, where the model list states it
        # what the server says of the weights behind the served name, hashed (fingerprint.model_hash)
        self.identity: str | None = None
        self._lock = threading.Lock()
        register_secret(api_key)
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            limits=httpx.Limits(max_connections=max_concurrency, max_keepalive_connections=max_concurrency),
            headers={"Authorization": f"Bearer {api_key}"} if api_key else None,
        )

    @property
    def engine_kind(self) -> str:
        """What each completion and confidence is stored with, and what calibrations are matched on."""
        return self.kind

    def close(self) -> None:
        self._client.close()

    def _request(self, method: str, url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """One HTTP call; every failure leaves here as an EngineError whose message holds no secret."""
        try:
            return self._send(method, url, body)
        except EngineError as exc:
            exc.message, exc.hint = redact(exc.message), redact(exc.hint)
            raise

    def _send(self, method: str, url: str, body: dict[str, Any] | None) -> dict[str, Any]:
        try:
            response = self._client.request(method, url, json=body)
        except httpx.TimeoutException as exc:
            raise EngineUnavailable(f"{url}: no answer in {self.timeout_s:g} s: {exc!r}") from exc
        except httpx.HTTPError as exc:
            raise EngineUnavailable(f"{url}: {exc!r}", hint="is the server running?") from exc
        status = response.status_code
        details: dict[str, Any] = {"status": status}
        if status in (408, 429) or status >= 500:
            raise EngineUnavailable(f"{url}: HTTP {status}: {response.text[:200]}", details=details)
        if status >= 400:
            said = _server_message(response)
            raise RequestRejected(f"{url}: HTTP {status}: {said}", details={**details, "server": said})
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise EngineUnavailable(f"{url}: HTTP {status}, not a JSON object: {response.text[:200]}")
        return data

    def served_models(self) -> list[str]:
        """The served model ids; remembers the chosen model's context length (vLLM's max_model_len) and
        vocabulary size (llama-server's meta.n_vocab)."""
        entries = [e for e in self._request("GET", f"{self.base_url}/models").get("data") or []
                   if isinstance(e, dict) and "id" in e]  # fmt: skip
        for entry in entries:
            if entry["id"] != (self.model or entries[0]["id"]):
                continue
            if isinstance(entry.get("max_model_len"), int):
                self.context_window = entry["max_model_len"]
            meta = entry.get("meta")
            if isinstance(meta, dict) and isinstance(meta.get("n_vocab"), int):
                self.vocabulary = meta["n_vocab"]
            self.identity = served_identity(entry)
        return [str(e["id"]) for e in entries]

    def _model(self) -> str:
        with self._lock:
            if not self.model:
                served = self.served_models()
                if not served:
                    raise EngineUnavailable(f"{redact(self.base_url)} serves no model yet")
                self.model = served[0]
            return self.model

    def _served_checked(self) -> list[str]:
        """The served models, refusing a server that does not serve the configured one."""
        served = self.served_models()
        if self.model and self.model not in served:
            raise RequestRejected(
                f"{redact(self.base_url)} does not serve {self.model!r}; it serves {served}"
            )
        return served

    def _chat(self, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], float]:
        """(the reply, its first choice, seconds) for one chat-completions request."""
        started = time.monotonic()
        data = self._request("POST", f"{self.base_url}/chat/completions", body)
        duration = time.monotonic() - started
        choices = data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
            raise EngineUnavailable(f"reply without choices: {json.dumps(data)[:300]}")
        return data, choice, duration

    def _completion(
        self, data: dict[str, Any], choice: dict[str, Any], duration: float, text: str,
        masked: Masked = ((), (), ()),
        pre_mask: PreMask | None = None,
    ) -> Completion:  # fmt: skip
        usage = data.get("usage") or {}
        return Completion(
            text=text,
            finish_reason=_FINISH.get(str(choice.get("finish_reason")), "error"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            duration_s=duration,
            model=str(data.get("model") or self.model),
            token_logprobs=masked[0],
            token_rivals=masked[1],
            token_nulls=masked[2],
            engine=self.engine_kind,
            pre_mask=pre_mask,
        )


IDENTIFYING = ("root", "parent", "max_model_len", "meta")  # vLLM's weights path; llama-server's n_params...


def served_identity(entry: dict[str, Any]) -> str | None:
    """A hash of what a model-list entry says of the weights beyond their name (vLLM's `root`, the path
    they were loaded from; llama-server's `meta`: parameters, size, vocabulary), so a quantised copy
    served under the same name keys other calibrations; None where the server says nothing more
    (Ollama's OpenAI API, for one: there a new served name is the only way to tell new weights)."""
    told = {key: entry[key] for key in IDENTIFYING if entry.get(key) is not None}
    if not told:
        return None
    return "served:" + hashlib.sha256(json.dumps(told, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _server_message(response: httpx.Response) -> str:
    """The server's error text: `{"error": {"message": ...}}` (OpenAI, vLLM), `{"message": ...}` (old
    vLLM), `{"detail": ...}` (FastAPI servers such as llama-cpp-python's)."""
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    if not isinstance(data, dict):
        return str(data)
    error = data.get("error")
    if isinstance(error, dict):
        return str(error.get("message", error))
    return str(data.get("message") or data.get("detail") or data)
