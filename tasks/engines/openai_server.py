"""The `openai` engine: any OpenAI-compatible chat-completions server, trusted only after a probe.

Servers agree on `/v1/chat/completions` and disagree on how a request says "constrain to this schema",
and several accept a form they then ignore, answering free text with HTTP 200. The dialect names the
form (`DIALECTS`); `auto` reads what the server says about itself at the start-up check and picks one,
or refuses, naming the dialects. Whatever the dialect, `check()` sends an enum-constrained probe whose
question invites a sentence, and refuses a server whose answer is not inside the enum (fail closed).

Logprobs: vLLM reports them after the grammar mask, llama.cpp and llama-cpp-python before it (raw
scores: the "`" a free answer would start with, not the "{" the grammar forced). A reply whose forced
steps show probability 1 (`vllm_logprobs.masked_token_logprobs`) gives `Completion.token_logprobs`
(mode `masked`). A dialect of a server that reports them before the mask (`PRE_MASK`) gives
`Completion.pre_mask` instead, the raw steps with the schema, renormalised over the values the grammar
allowed by `tasks.confidence.renormalise` (mode `renormalised`, where the probe's steps spell its answer;
a value it cannot renormalise honestly has no confidence). Any other reply carries none (mode `none`),
and a field under a bound fails closed. `check()` reports the mode the probe showed, and refuses `none`
when the run holds any value to a confidence bound (`needs_logprobs`: a calibration or its default,
min_confidence, x-min-confidence).

Control tokens: `check()` reads the served tokenizer's own (`control_tokens`) where the server offers
`/tokenize` and `/detokenize` (vLLM and SGLang in vLLM's words, llama-server in its own), and every
one of them in a record's text is broken before it is sent; on every server, whatever it offers,
every chat family's known markers are broken too (`control_tokens.plain`). `ServerInfo.control_tokens`
says which, for `formwork doctor`.

Transport, retries' error mapping, the API key and redaction are `http_base.HttpEngine`'s.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from formwork.tasks.engines.base import (
    Completion,
    EngineError,
    EngineUnavailable,
    JsonSchema,
    Message,
    PreMask,
    RequestRejected,
    Sampling,
    TopStep,
)
from formwork.tasks.engines.control_tokens import Post, breaker, plain, served_control_tokens
from formwork.tasks.engines.http_base import (
    PROBE_QUESTION,
    PROBE_SCHEMA,
    HttpEngine,
    ServerInfo,
    refuse_ngram_ban,
)
from formwork.tasks.engines.vllm_logprobs import TOP_LOGPROBS, masked_token_logprobs
from formwork.tasks.redact import redact

DIALECTS = ("json_schema", "json_object+schema", "llama-server", "ollama")
PRE_MASK = ("json_object+schema", "llama-server")  # their logprobs come before the grammar
# Top alternatives asked for where they are renormalised: every value still open at a step must be
# listed, and llama-cpp-python computes the list from a full sort of the vocabulary anyway.
PRE_MASK_TOP_LOGPROBS = 1000
# Why each dialect's form, and the trap its probe guards against (docs/production.md has the sources).
_FIX = {
    "json_schema": "OpenAI's response_format json_schema (vLLM, SGLang); an old server ignores it",
    "json_object+schema": "llama-cpp-python's response_format json_object with a schema",
    "llama-server": "llama-server's top-level json_schema field (its response_format "
    '{"type":"json_schema","schema":...} is read as an empty schema)',
    "ollama": "Ollama's format field (ignored for MLX models and with thinking off)",
}


def schema_fields(dialect: str, schema: JsonSchema) -> dict[str, Any]:
    """The request fields that carry `schema` in `dialect`: a fresh dict per request, never shared."""
    if dialect == "json_schema":
        wrapped = {"name": str(schema.get("title") or "schema"), "strict": True, "schema": schema}
        return {"response_format": {"type": "json_schema", "json_schema": wrapped}}
    if dialect == "json_object+schema":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if dialect == "llama-server":
        return {"json_schema": schema}
    if dialect == "ollama":
        return {"format": schema}
    raise ValueError(f"unknown dialect {dialect!r}; one of {', '.join(DIALECTS)} or auto")


class OpenAIServerEngine(HttpEngine):
    """One OpenAI-compatible server at `base_url` (ending in /v1) speaking `dialect`."""

    kind = "openai"

    def __init__(
        self, base_url: str, model: str | None = None, *, dialect: str = "auto",
        needs_logprobs: bool = False, **options: Any,
    ) -> None:  # fmt: skip
        if dialect != "auto":
            schema_fields(dialect, {})  # an unknown dialect fails here, before any request
        super().__init__(base_url, model, **options)
        self.dialect = dialect
        self.needs_logprobs = needs_logprobs
        self.logprob_mode = "unknown"  # masked | renormalised | none, once check() has seen the probe
        self.control_tokens: tuple[str, ...] | None = None  # the served tokenizer's, once check() read them
        self._break_served = breaker(())

    def plain(self, content: str) -> str:
        """`content` with the served tokenizer's control tokens (once read) and every family's known
        markers broken: a record's text can never open a chat turn on the server."""
        return plain(self._break_served(content))

    def complete(
        self, messages: list[Message], sampling: Sampling, schema: JsonSchema | None = None
    ) -> Completion:
        refuse_ngram_ban(sampling)
        if schema is not None and self.dialect == "auto":
            raise RequestRejected("the server's dialect is not known yet", hint="run check() first")
        body: dict[str, Any] = {
            "model": self._model(),
            "messages": [{**m, "content": self.plain(m["content"])} for m in messages],
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            **self._penalties(sampling),
        }
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if schema is not None:
            body |= schema_fields(self.dialect, schema)
            top = PRE_MASK_TOP_LOGPROBS if self.dialect in PRE_MASK else TOP_LOGPROBS
            body |= {"logprobs": True, "top_logprobs": top}
        try:
            data, choice, duration = self._chat(body)
        except EngineUnavailable as exc:
            if "validation error" not in exc.message:
                raise
            # llama-cpp-python answers a request it cannot read with HTTP 500, not 4xx: no retry helps
            raise RequestRejected(
                f"{exc.message}: the server cannot read a request in dialect {self.dialect!r} (it says so "
                "with HTTP 500, not a 4xx; not retried)",
                hint=f"set the dialect to the one the server speaks: {', '.join(DIALECTS)}",
                details=exc.details,
            ) from None
        text = choice["message"].get("content") or ""
        if schema is None:
            return self._completion(data, choice, duration, text)
        if self.dialect in PRE_MASK:
            steps = pre_mask_steps(choice.get("logprobs"))
            pre_mask = PreMask(steps, schema) if steps else None
            return self._completion(data, choice, duration, text, pre_mask=pre_mask)
        masked = masked_token_logprobs(choice.get("logprobs"), text)
        return self._completion(data, choice, duration, text, masked)

    @property
    def engine_kind(self) -> str:
        return f"openai:{self.dialect}"

    def _penalties(self, sampling: Sampling) -> dict[str, Any]:
        """Neutral penalties in the server's own words: llama.cpp defaults to repeat_penalty 1.1, which
        silently forbids the repeated `"` and `,` a schema needs."""
        if self.dialect in ("json_object+schema", "llama-server"):
            return {"repeat_penalty": sampling.repetition_penalty, "top_k": max(sampling.top_k, 0)}
        if self.dialect == "json_schema":  # vLLM and SGLang both read these
            return {"repetition_penalty": sampling.repetition_penalty, "top_k": sampling.top_k or -1}
        return {"frequency_penalty": 0.0, "presence_penalty": 0.0}

    def _say(self, path: str) -> dict[str, Any] | None:
        """A GET on the server's root that may not exist: its JSON, or None."""
        try:
            return self._request("GET", f"{self.root}{path}")
        except RequestRejected:
            return None

    def _detect(self) -> str:
        """`auto`: the dialect from what the server says about itself, or a refusal naming them all."""
        title = str(((self._say("/openapi.json") or {}).get("info") or {}).get("title", ""))
        if "llama.cpp python" in title.lower():
            return "json_object+schema"
        if self._say("/props") is not None:  # llama-server's own endpoint
            return "llama-server"
        if self._say("/api/version") is not None:  # Ollama's
            return "ollama"
        if self._say("/version") is not None or self._say("/get_server_info") is not None:  # vLLM, SGLang
            return "json_schema"
        raise RequestRejected(
            f"{redact(self.root)}: cannot tell which server this is (openapi title {title!r})",
            hint=f"set the dialect to one of {', '.join(DIALECTS)}",
        )

    def check(self) -> ServerInfo:
        """Start-up check: the model is served, the dialect's schema really constrains the output, and
        logprobs are the masked distribution when a confidence bound needs them."""
        served = self._served_checked()
        self._model()
        if self.dialect == "auto":
            self.dialect = self._detect()
        control = self._read_control_tokens()
        probe = self.complete(PROBE_QUESTION, Sampling(max_tokens=24), PROBE_SCHEMA)
        try:
            jsonschema.validate(json.loads(probe.text), PROBE_SCHEMA)
        except (ValueError, jsonschema.ValidationError):
            raise RequestRejected(
                f"{redact(self.root)} ignores the schema in dialect {self.dialect!r}: the enum probe "
                f"got {probe.text[:120]!r} (HTTP 200, so nothing else would have noticed)",
                hint=f"this dialect is {_FIX[self.dialect]}; pick the one the server speaks",
            ) from None
        spelled = _spells(probe.pre_mask, probe.text)
        self.logprob_mode = "masked" if probe.token_logprobs else "renormalised" if spelled else "none"
        if self.needs_logprobs and self.logprob_mode == "none":
            said = " (their tokens do not spell its answer)" if probe.pre_mask else ""
            raise RequestRejected(
                f"{redact(self.root)} sent no usable logprobs{said} in dialect {self.dialect!r}, and this "
                "run holds values to a confidence bound (a calibration or its default, min_confidence or "
                "x-min-confidence)",
                hint="use a server that returns logprobs, or run with calibration off and no bounds",
            )
        return ServerInfo(redact(self.base_url), "unknown", self.model, tuple(served), self.dialect,
                          self.logprob_mode, control)  # fmt: skip

    def _tokenizer(self) -> Post:
        """/tokenize and /detokenize in vLLM's words (what `control_tokens` speaks), for this server."""
        if self.dialect != "llama-server":
            return lambda path, body: self._request("POST", f"{self.root}{path}", body)

        def llama_server(path: str, body: dict[str, Any]) -> dict[str, Any]:
            if path == "/tokenize":
                said = {"content": body["prompt"], "add_special": False}
                return self._request("POST", f"{self.root}/tokenize", said)
            return {"prompt": self._request("POST", f"{self.root}/detokenize", body).get("content")}

        return llama_server

    def _read_control_tokens(self) -> str:
        """Read the served tokenizer's control tokens where the server can say; what doctor shows."""
        try:
            found = served_control_tokens(self._tokenizer(), self.model, self.vocabulary)
        except EngineError as exc:
            self.control_tokens = None
            return (f"not readable here ({redact(exc.message)[:80]}): every chat family's known markers "
                    "are broken instead")  # fmt: skip
        self.control_tokens = found
        self._break_served = breaker(found)
        return f"{len(found)} read from the served tokenizer, broken in every record (and the known markers)"


def _spells(pre_mask: PreMask | None, text: str) -> bool:
    """Whether pre-mask steps can be renormalised at all: their tokens spell the answer (the end token
    aside). llama.cpp's own server (xllamacpp 2026.10, grammar by LLGuidance) reports the tokens of an
    unconstrained answer beside a constrained text, so it gives none (tests/test_llamacpp_server.py)."""
    if pre_mask is None:
        return False
    pieces = [token for token, _, _ in pre_mask.steps]
    return text in ("".join(pieces), "".join(pieces[:-1]))


def pre_mask_steps(logprobs: Any) -> tuple[TopStep, ...]:
    """(token, logprob, top list in the server's order) per step of a chat choice's `logprobs`, read by
    token text (llama-cpp-python sends no bytes); () when malformed."""
    entries = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(entries, list) or not entries:
        return ()
    steps = []
    for entry in entries:
        if not isinstance(entry, dict):
            return ()
        token, logprob, tops = entry.get("token"), entry.get("logprob"), entry.get("top_logprobs")
        if not isinstance(token, str) or not _number(logprob) or not isinstance(tops, list):
            return ()
        listed = [(t.get("token"), t.get("logprob")) for t in tops if isinstance(t, dict)]
        if not all(isinstance(t, str) and _number(lp) for t, lp in listed) or len(listed) != len(tops):
            return ()
        steps.append((token, float(logprob), tuple((t, float(lp)) for t, lp in listed)))
    return tuple(steps)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value
