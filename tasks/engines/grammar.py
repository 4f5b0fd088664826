"""XGrammar for the embedded engine: schemas compiled against the GGUF's own vocabulary, and one
batched mask fill per decode step for every constrained sequence in the batch.

The vocabulary is the model's, read piece by piece (vocab type RAW, end tokens as stop tokens,
control tokens blanked so no grammar can ever emit them). The HF-tokenizer route loses the special-token
list and lets `<|endoftext|>` inside a JSON string. The bitmask is a plain numpy array and is applied
with numpy: faster here than xgrammar's torch CPU kernel. The batch matcher gets one thread: on this
kind of machine two threads made each call 0.2-2 ms instead of ~65 µs.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from formwork.tasks.engines.base import JsonSchema, require

CACHE_BYTES = 256 * 1024 * 1024


class Grammars:
    """Compiles JSON Schemas into matchers and masks rows of logits, many sequences per call."""

    def __init__(self, pieces: list[bytes], stop_ids: list[int], n_vocab: int, rows: int):
        self._xgr = xgr = require("xgrammar", "local")
        info = xgr.TokenizerInfo(
            pieces, vocab_type=xgr.VocabType.RAW, vocab_size=n_vocab, stop_token_ids=stop_ids
        )
        # bounded: grounded decoding compiles a schema per record, and each would otherwise stay cached
        self._compiler = xgr.GrammarCompiler(
            info, max_threads=1, cache_enabled=True, cache_limit_bytes=CACHE_BYTES
        )
        self._batch = xgr.BatchGrammarMatcher(max_threads=1)
        self._bitmask = np.zeros((rows, math.ceil(n_vocab / 32)), dtype=np.int32)
        self._n_vocab = n_vocab

    def matcher(self, schema: JsonSchema) -> Any:
        """A fresh matcher for one call (compiled grammars are cached by the compiler).

        JSON is written spaced as models write it (`{"name": "Mike Chen", ...}`, json.dumps' own
        separators), never compact: a compact grammar forbids the `": "` a model writes after a key,
        and what it allows instead, `":` and then `null`, took the mass. Qwen2.5-Coder-1.5B wrote
        `"name": null` for 81% of the contact gold's calibration half, its own notes naming the person
        (BENCHMARKS section 27)."""
        grammar = self._compiler.compile_json_schema(
            json.dumps(schema), any_whitespace=False, separators=(", ", ": "), strict_mode=True
        )
        return self._xgr.GrammarMatcher(grammar)

    def mask(self, matchers: list[Any], rows: np.ndarray, indices: list[int]) -> None:
        """In place: `rows[indices[i]]` keeps only the tokens `matchers[i]` allows next (others -inf)."""
        if not matchers:
            return
        slots = list(range(len(matchers)))
        self._batch.batch_fill_next_token_bitmask(matchers, self._bitmask, slots)
        bits = self._bitmask[: len(matchers)].view(np.uint8)
        allowed = np.unpackbits(bits, axis=1, bitorder="little")[:, : self._n_vocab].astype(bool)
        block = rows[indices]
        block[~allowed] = -np.inf
        rows[indices] = block
