"""The vLLM engine: both passes over vLLM's OpenAI-compatible HTTP API, one shared connection pool.

Why `structured_outputs: {"json": schema}` and not `response_format` json_schema: vLLM turns both into
the same grammar request, but `structured_outputs` is vLLM's own current field (>= 0.10.2): the schema
reaches the grammar backend as is, with no OpenAI `strict`/`name` wrapper that vLLM does not honour.
Its risk, that an old or non-vLLM server silently ignores an unknown field, is why `check()` sends a
tiny enum-constrained probe at start-up and refuses a server whose answer is not in the enum.

Sampling is always sent in full, neutral values included (repetition_penalty 1.0 too): else vLLM
applies the model's `generation_config.json` (Qwen ships repetition_penalty 1.05, top_k 20), and a
repetition penalty silently forbids the repeated `"` and `,` a schema needs.

Constrained calls ask for each token's log-probability (and its runner-up's), kept as
`Completion.token_logprobs` only when the reply shows they are the grammar-masked distribution
(`vllm_logprobs`): the evidence behind enum and boolean confidences.

Errors are mapped here (see `base.py`): refused connection, timeout, 408, 429, 5xx, a garbled reply
-> EngineUnavailable; other 4xx -> RequestRejected, naming the schema and the keyword xgrammar refuses.
"""

from __future__ import annotations

import json
import re
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
    Message,
    RequestRejected,
    Sampling,
)
from formwork.tasks.engines.vllm_logprobs import TOP_LOGPROBS, masked_token_logprobs
from formwork.tasks.redact import redact, register_secret

PROBE_SCHEMA: JsonSchema = {
    "title": "formwork_probe",
    "type": "object",
    "properties": {"answer": {"enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
FIX_HINT = "launch vLLM >= 0.10.2 with the xgrammar backend, as deploy/vllm/serve_gpu.sh does"
_FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length", "abort": "abort"}
# Off switches for what `generation_config.json` could set (top_k -1 is "off" in old and new vLLM).
_NEUTRAL = {"top_k": -1, "min_p": 0.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
_XGRAMMAR_FORMATS = {"email", "date", "time", "date-time", "duration", "ipv4", "ipv6", "hostname", "uuid"}
_XGRAMMAR_FORMATS |= {"uri", "uri-reference", "uri-template", "json-pointer", "relative-json-pointer"}
# Strings that chat tokenizers read as control tokens even inside a message: ChatML and Llama 3
# (`<|im_start|>`, `<|eot_id|>`), Llama 2 and Mistral (`<s>`, `[INST]`), Gemma and StarCoder-style
# names (`<start_of_turn>`, `<file_sep>`, `<reponame>`).
_CONTROL_LIKE = re.compile(r"<\|[^<>|\s]{1,40}\|>|</?s>|\[/?INST\]|<[a-z]+_[a-z_]+>|<(?:reponame|filename)>")
WORD_JOINER = "\u2060"


def plain(content: str) -> str:
    """`content` with every control-token look-alike broken by an invisible word joiner after its first
    character, so a record's text can never forge a chat turn: vLLM renders the chat template and its
    tokenizer turns `<|im_start|>` into the real control token wherever it appears."""
    return _CONTROL_LIKE.sub(lambda m: m[0][0] + WORD_JOINER + m[0][1:], content)


@dataclass(frozen=True)
class ServerInfo:
    """What `check()` found, for the start-up log line."""

    base_url: str
    version: str
    model: str
    served: tuple[str, ...]


def _refused_here(node: dict[str, Any]) -> str | None:
    """The keyword in this schema node that vLLM 0.32 refuses for xgrammar (mirrors its own check)."""
    kind = node.get("type")
    kinds = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()
    if kinds & {"integer", "number"} and "multipleOf" in node:
        return "multipleOf"
    array_refused = [key for key in ("uniqueItems", "contains", "minContains", "maxContains") if key in node]
    if "array" in kinds and array_refused:
        return array_refused[0]
    if "string" in kinds:
        if "format" in node and node["format"] not in _XGRAMMAR_FORMATS:
            return f"format: {node['format']}"
        if ("pattern" in node or "format" in node) and ("minLength" in node or "maxLength" in node):
            return "pattern/format with minLength/maxLength"
    if "object" in kinds and "propertyNames" in node:
        return "propertyNames"
    patterns = node.get("patternProperties")
    if "object" in kinds and isinstance(patterns, dict) and ("properties" in node or len(patterns) > 1):
        return "patternProperties"
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) >= 2:
        return "allOf"
    return None


def unsupported_keywords(schema: Any, path: str = "$") -> list[str]:
    """Every `path: keyword` in the schema that xgrammar refuses, so a 400 can say what to change."""
    if isinstance(schema, list):
        return [hit for i, item in enumerate(schema) for hit in unsupported_keywords(item, f"{path}[{i}]")]
    if not isinstance(schema, dict):
        return []
    here = _refused_here(schema)
    hits = [f"{path}: {here}"] if here else []
    for key, value in schema.items():
        hits += unsupported_keywords(value, f"{path}.{key}")
    return hits


class VllmServerEngine:
    """One vLLM server (OpenAI API at `base_url`, ending in /v1), callable from many threads at once.

    httpx.Client is thread-safe; its pool keeps `max_concurrency` keep-alive connections for the
    threads to share. `timeout_s` bounds each wait on the server; a non-streamed completion sends
    nothing until it is done, so the read timeout is the per-request limit.
    """

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
        self.model = model or ""
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.context_window: int | None = None  # the server's max_model_len, read with the model list
        self._lock = threading.Lock()
        register_secret(api_key)
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            limits=httpx.Limits(max_connections=max_concurrency, max_keepalive_connections=max_concurrency),
            headers={"Authorization": f"Bearer {api_key}"} if api_key else None,
        )

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
        """The served model ids; remembers the chosen model's context length (vLLM's max_model_len)."""
        entries = [e for e in self._request("GET", f"{self.base_url}/models").get("data") or []
                   if isinstance(e, dict) and "id" in e]  # fmt: skip
        for entry in entries:
            if entry["id"] == (self.model or entries[0]["id"]) and isinstance(
                entry.get("max_model_len"), int
            ):
                self.context_window = entry["max_model_len"]
        return [str(e["id"]) for e in entries]

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as plain text, by the server's own tokenizer (vLLM's /tokenize)."""
        root = self.base_url.removesuffix("/v1")
        body = {"model": self._model(), "prompt": text, "add_special_tokens": False}
        count = self._request("POST", f"{root}/tokenize", body).get("count")
        if not isinstance(count, int):
            raise EngineUnavailable(f"{redact(root)}/tokenize answered without a token count")
        return count

    def _model(self) -> str:
        with self._lock:
            if not self.model:
                served = self.served_models()
                if not served:
                    raise EngineUnavailable(f"{redact(self.base_url)} serves no model yet")
                self.model = served[0]
            return self.model

    def complete(
        self, messages: list[Message], sampling: Sampling, schema: JsonSchema | None = None
    ) -> Completion:
        if sampling.no_repeat_ngram_size > 0:
            raise RequestRejected(
                f"no_repeat_ngram_size={sampling.no_repeat_ngram_size}: vLLM has no n-gram ban",
                hint="use the embedded engine for it, or set no_repeat_ngram_size=0",
            )
        body: dict[str, Any] = {
            "model": self._model(),
            "messages": [{**m, "content": plain(m["content"])} for m in messages],
            "max_completion_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "repetition_penalty": sampling.repetition_penalty,
            **_NEUTRAL,
            "top_k": sampling.top_k if sampling.top_k > 0 else -1,
        }
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if schema is not None:
            body["structured_outputs"] = {"json": schema}  # a fresh dict per request, never shared
            body |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}  # for enum confidences
        started = time.monotonic()
        try:
            data = self._request("POST", f"{self.base_url}/chat/completions", body)
        except RequestRejected as exc:
            raise _explain_rejection(exc, schema) from None
        duration = time.monotonic() - started
        try:
            choice, message = data["choices"][0], data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise EngineUnavailable(f"reply without choices: {json.dumps(data)[:300]}") from None
        usage = data.get("usage") or {}
        text = message.get("content") or message.get("reasoning") or ""  # thinking, cut short
        return Completion(
            text=text,
            finish_reason=_FINISH.get(str(choice.get("finish_reason")), "error"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            duration_s=duration,
            model=str(data.get("model") or self.model),
            token_logprobs=masked_token_logprobs(choice.get("logprobs"), text) if schema is not None else (),
        )

    def check(self) -> ServerInfo:
        """Start-up check: the model is served, and the server really constrains output to a schema.

        An old or misconfigured server answers the probe with free text, because unknown request
        fields are ignored, not refused; only a constrained answer can be both JSON and in the enum.
        """
        served = self.served_models()
        if self.model and self.model not in served:
            raise RequestRejected(
                f"{redact(self.base_url)} does not serve {self.model!r}; it serves {served}"
            )
        root = self.base_url.removesuffix("/v1")
        try:  # not part of the OpenAI API: another server may lack it, the probe still decides
            version = str(self._request("GET", f"{root}/version").get("version", "unknown"))
        except RequestRejected:
            version = "unknown"
        question = [{"role": "user", "content": "Is water wet? Say what you think in one sentence."}]
        probe = self.complete(question, Sampling(max_tokens=16), PROBE_SCHEMA)
        try:
            answer = json.loads(probe.text).get("answer")
        except (ValueError, AttributeError):
            answer = None
        if answer not in ("yes", "no"):
            raise RequestRejected(
                f"{redact(root)} (vLLM {version}) ignores structured outputs: "
                f"enum probe got {probe.text[:120]!r}",
                hint=FIX_HINT,
            )
        return ServerInfo(
            base_url=redact(self.base_url), version=version, model=self.model, served=tuple(served)
        )


def _server_message(response: httpx.Response) -> str:
    """vLLM's error text: `{"error": {"message": ...}}` now, `{"message": ...}` in older releases."""
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    if not isinstance(data, dict):
        return str(data)
    error = data.get("error")
    return str(error.get("message", error) if isinstance(error, dict) else data.get("message", data))


def _explain_rejection(exc: RequestRejected, schema: JsonSchema | None) -> EngineError:
    """Name the schema, and for an unsupported-feature 400 the keyword, so the author knows what to fix."""
    if schema is None:
        return exc
    title = schema.get("title", "<untitled>")
    keywords = unsupported_keywords(schema)
    details = {**exc.details, "schema_title": title, "unsupported": keywords}
    if "not supported" not in exc.message.lower():
        return RequestRejected(f"schema {title!r}: {exc.message}", details=details)
    found = ", ".join(keywords) or "a keyword this check does not know (see the server log)"
    return RequestRejected(
        f"schema {title!r} uses JSON Schema features the server's grammar engine refuses: {found}",
        hint=f"remove or relax them in the schema; server said: {exc.details.get('server', exc.message)}",
        details=details,
    )
