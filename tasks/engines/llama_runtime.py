"""One GGUF model and one llama.cpp context with a sequence (and its KV cache) per slot.

A thin layer over llama.cpp's C API (through llama-cpp-python's ctypes bindings), not over its `Llama`
class: `Llama` drives one sequence, and several records decode at once only if one `llama_decode`
carries a token of each. The context keeps a separate KV stream per sequence (`kv_unified` off), so
each slot has the full `n_ctx` and attends to its own cells only. That also keeps greedy text
independent of the batch: a step's attention for one sequence has the same shape alone or beside
others (measured: logits bit-identical; with a unified cache they moved by up to 1.3).

Threads: a fixed count when one is given; otherwise `cores.ThreadBudget` sets, before each decode,
one thread per core that other processes leave free (a thread without a core stalls the others).

Only the decode thread touches the context; tokenising reads the vocabulary alone and is safe from
any thread.
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path
from typing import Any

import numpy as np

from formwork.tasks.engines.base import EngineUnavailable, require
from formwork.tasks.engines.cores import ThreadBudget

BATCH = 512  # tokens per llama_decode: prompts are evaluated in chunks of this size


class LlamaRuntime:
    """The model, its vocabulary and a context of `slots` sequences of `n_ctx` tokens each; `threads`
    None: as many as there are free cores, measured as it runs."""

    def __init__(self, path: Path, n_ctx: int, slots: int, threads: int | None):
        self._lib = lib = require("llama_cpp", "local")
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # llama.cpp's load chatter
        lib.llama_backend_init()
        self._model = lib.llama_model_load_from_file(str(path).encode(), lib.llama_model_default_params())
        if not self._model:
            raise ValueError(f"llama.cpp could not load {path}: is it a GGUF model file?")
        params = lib.llama_context_default_params()
        params.n_ctx = n_ctx * slots
        params.n_batch = params.n_ubatch = BATCH
        params.n_seq_max = slots
        params.kv_unified = False
        self._budget = ThreadBudget() if threads is None else None
        params.n_threads = params.n_threads_batch = threads or self._budget.threads  # type: ignore[union-attr]
        params.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_DISABLED  # as `Llama` sets it
        params.no_perf = True
        self._ctx = lib.llama_init_from_model(self._model, params)
        if not self._ctx:
            lib.llama_model_free(self._model)
            raise ValueError(f"llama.cpp could not make a context of {slots} x {n_ctx} tokens")
        self._memory = lib.llama_get_memory(self._ctx)
        self._batch = lib.llama_batch_init(BATCH, 0, 1)
        self.vocab = lib.llama_model_get_vocab(self._model)
        self.n_vocab = int(lib.llama_vocab_n_tokens(self.vocab))
        self.n_ctx = int(lib.llama_n_ctx_seq(self._ctx))

    @property
    def threads(self) -> tuple[int, int]:
        """(generation, prompt evaluation) threads, as llama.cpp reports them now."""
        return int(self._lib.llama_n_threads(self._ctx)), int(self._lib.llama_n_threads_batch(self._ctx))

    def metadata(self, key: str) -> str | None:
        """A string from the GGUF's metadata (the chat template, for one), or None when absent."""
        buffer = ctypes.create_string_buffer(1 << 16)
        size = self._lib.llama_model_meta_val_str(self._model, key.encode(), buffer, len(buffer))
        return buffer.value.decode("utf-8") if size >= 0 else None

    def tokenize(self, text: str, special: bool) -> list[int]:
        """Token ids of `text`; `special` turns control-token strings (`<|im_start|>`) into those tokens."""
        data = text.encode("utf-8")
        capacity = len(data) + 8
        tokens = (ctypes.c_int32 * capacity)()
        count = self._lib.llama_tokenize(self.vocab, data, len(data), tokens, capacity, False, special)
        if count < 0:  # cannot happen with a byte-level vocabulary, but never trust a buffer size
            tokens = (ctypes.c_int32 * -count)()
            count = self._lib.llama_tokenize(self.vocab, data, len(data), tokens, -count, False, special)
        return list(tokens[:count])

    def piece(self, token: int, special: bool = False) -> bytes:
        """A token's raw bytes, read with a large buffer (`Llama.detokenize` drops long tokens)."""
        buffer = ctypes.create_string_buffer(256)
        size = self._lib.llama_token_to_piece(self.vocab, token, buffer, len(buffer), 0, special)
        return buffer.raw[: max(size, 0)]

    def is_control(self, token: int) -> bool:
        return bool(self._lib.llama_vocab_is_control(self.vocab, token))

    def is_end(self, token: int) -> bool:
        return bool(self._lib.llama_vocab_is_eog(self.vocab, token))

    def forget(self, slot: int, keep: int) -> None:
        """Drop the slot's KV cache from position `keep` on (the shared prefix stays)."""
        self._lib.llama_memory_seq_rm(self._memory, slot, keep, -1)

    def decode(self, tokens: list[tuple[int, int, int, bool]]) -> None:
        """Evaluate (token, position, slot, want_logits) entries, at most BATCH, in one llama_decode."""
        batch = self._batch
        for i, (token, position, slot, logits) in enumerate(tokens):
            batch.token[i] = token
            batch.pos[i] = position
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = slot
            batch.logits[i] = logits
        batch.n_tokens = len(tokens)
        if self._budget is not None:
            wanted = self._budget.now()
            if wanted != self._lib.llama_n_threads(self._ctx):
                self._lib.llama_set_n_threads(self._ctx, wanted, wanted)
        status = self._lib.llama_decode(self._ctx, batch)
        if status != 0:
            raise EngineUnavailable(f"llama_decode failed with status {status}", details={"status": status})

    def logits(self, index: int) -> np.ndarray:
        """A copy of the logits of the `index`-th output of the last decode."""
        pointer: Any = self._lib.llama_get_logits_ith(self._ctx, index)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).copy()

    def close(self) -> None:
        if self._ctx:
            self._lib.llama_batch_free(self._batch)
            self._lib.llama_free(self._ctx)
            self._lib.llama_model_free(self._model)
            self._ctx = self._model = None
