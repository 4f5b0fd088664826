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

The transport, error mapping and redaction are `http_base.HttpEngine`'s; a 4xx is explained here,
naming the schema and the keyword xgrammar refuses. `check()` also reads the served tokenizer's control
tokens (`control_tokens`), so that every one of them in a record's text is broken before it is sent.
"""

from __future__ import annotations

from typing import Any

from formwork.tasks.engines.base import (
    Completion,
    EngineError,
    EngineUnavailable,
    JsonSchema,
    Message,
    RequestRejected,
    Sampling,
)
from formwork.tasks.engines.control_tokens import breaker, plain, served_control_tokens
from formwork.tasks.engines.http_base import (
    PROBE_QUESTION,
    PROBE_SCHEMA,
    HttpEngine,
    ServerInfo,
    probe_answer,
    refuse_ngram_ban,
)
from formwork.tasks.engines.vllm_logprobs import TOP_LOGPROBS, masked_token_logprobs
from formwork.tasks.redact import redact

FIX_HINT = "launch vLLM >= 0.10.2 with the xgrammar backend, as deploy/vllm/serve_gpu.sh does"
# Off switches for what `generation_config.json` could set (top_k -1 is "off" in old and new vLLM).
_NEUTRAL = {"top_k": -1, "min_p": 0.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
_XGRAMMAR_FORMATS = {"email", "date", "time", "date-time", "duration", "ipv4", "ipv6", "hostname", "uuid"}
_XGRAMMAR_FORMATS |= {"uri", "uri-reference", "uri-template", "json-pointer", "relative-json-pointer"}


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


class VllmServerEngine(HttpEngine):
    """One vLLM server (OpenAI API at `base_url`, ending in /v1), callable from many threads at once."""

    kind = "vllm"

    def __init__(self, base_url: str, model: str | None = None, **options: Any) -> None:
        super().__init__(base_url, model, **options)
        self.control_tokens: tuple[str, ...] = ()  # read from the served tokenizer by check()
        self._break_served = breaker(())

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as plain text, by the server's own tokenizer (vLLM's /tokenize)."""
        root = self.base_url.removesuffix("/v1")
        body = {"model": self._model(), "prompt": text, "add_special_tokens": False}
        count = self._request("POST", f"{root}/tokenize", body).get("count")
        if not isinstance(count, int):
            raise EngineUnavailable(f"{redact(root)}/tokenize answered without a token count")
        return count

    def plain(self, content: str) -> str:
        """`content` with the served tokenizer's control tokens (read by `check()`) and every common
        look-alike broken, so a record's text can never forge a chat turn: vLLM renders the chat
        template and its tokenizer turns `<|im_start|>` into the real control token wherever it is."""
        return plain(self._break_served(content))

    def complete(
        self, messages: list[Message], sampling: Sampling, schema: JsonSchema | None = None
    ) -> Completion:
        refuse_ngram_ban(sampling)
        body: dict[str, Any] = {
            "model": self._model(),
            "messages": [{**m, "content": self.plain(m["content"])} for m in messages],
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
        try:
            data, choice, duration = self._chat(body)
        except RequestRejected as exc:
            raise _explain_rejection(exc, schema) from None
        message = choice["message"]
        text = message.get("content") or message.get("reasoning") or ""  # thinking, cut short
        masked = masked_token_logprobs(choice.get("logprobs"), text) if schema is not None else ((), (), ())
        return self._completion(data, choice, duration, text, masked)

    def check(self) -> ServerInfo:
        """Start-up check: the model is served, its control tokens are known, and the server really
        constrains output to a schema.

        An old or misconfigured server answers the probe with free text, because unknown request
        fields are ignored, not refused; only a constrained answer can be both JSON and in the enum.
        """
        served = self._served_checked()
        try:  # not part of the OpenAI API: another server may lack it, the probe still decides
            version = str(self._request("GET", f"{self.root}/version").get("version", "unknown"))
        except RequestRejected:
            version = "unknown"
        model = self._model()
        try:
            self.control_tokens = served_control_tokens(
                lambda path, body: self._request("POST", f"{self.root}{path}", body), model
            )
        except RequestRejected:  # a server without /tokenize or /detokenize: the look-alikes remain
            self.control_tokens = ()
        self._break_served = breaker(self.control_tokens)
        probe = self.complete(PROBE_QUESTION, Sampling(max_tokens=16), PROBE_SCHEMA)
        if probe_answer(probe.text) not in ("yes", "no"):
            raise RequestRejected(
                f"{redact(self.root)} (vLLM {version}) ignores structured outputs: "
                f"enum probe got {probe.text[:120]!r}",
                hint=FIX_HINT,
            )
        return ServerInfo(
            base_url=redact(self.base_url), version=version, model=self.model, served=tuple(served)
        )


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
