"""Continuous batching for the embedded engine: several calls decode at once, one llama_decode a step.

Callers (the pipeline runs `max_concurrency` records in threads) hand a `Job` to `run()` and wait.
One decode thread owns the llama.cpp context. Each loop it admits waiting jobs into free slots
(evaluating their prompts and picking their first tokens), then evaluates the last token of every
active job in one batch, masks all constrained rows with one XGrammar call, and picks each next token.
A forced job (`Job.forced`, teacher forcing for scoring a given answer) is masked and logged the same
way; only its pick differs (`tasks.engines.forcing`).

A slot keeps the tokens its KV cache holds after its job ends. A new job lands on the free slot whose
cache shares the longest prefix with its prompt (among equals, the one freed longest ago), so a
record's formatting call finds its reasoning call's prompt already evaluated. A slot whose last job
was free text is held for the call that continues that conversation (a prompt that starts with the
slot's last prompt): other jobs take it only when no other slot is free. Without that, the next
record's reasoning call, whose prompt shares the system prompt with every used slot, could take the
slot a moment before the formatting call it was kept for arrives.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from formwork.tasks.engines.base import EngineError, EngineUnavailable, FinishReason, RequestRejected
from formwork.tasks.engines.batch_jobs import Job, Slot, Timings, shared_prefix
from formwork.tasks.engines.forcing import Forcer
from formwork.tasks.engines.grammar import Grammars
from formwork.tasks.engines.llama_runtime import BATCH, LlamaRuntime
from formwork.tasks.engines.sampling import masked_alternatives, masked_logprob, pick
from formwork.tasks.engines.spelling import SPELLINGS, spelled_logprobs


class BatchDecoder:
    """Runs jobs on `runtime`'s slots from one thread; `run()` may be called from many threads."""

    def __init__(
        self,
        runtime: LlamaRuntime,
        slots: int,
        pieces: list[bytes],
        stop_ids: set[int],
        grammars: Callable[[], Grammars],
    ):
        self._runtime = runtime
        self._pieces = pieces
        self._stop_ids = stop_ids
        self._forcer = Forcer(pieces, stop_ids)
        self._grammars = grammars  # built on the first constrained call (xgrammar imports torch)
        self._slots = [Slot(i) for i in range(slots)]
        self._waiting: deque[Job] = deque()
        self._wake = threading.Condition()
        self._closed = False
        self._finished = 0
        self.timings = Timings()
        self._thread = threading.Thread(target=self._loop, name="formwork-decode", daemon=True)
        self._thread.start()

    def run(self, job: Job) -> Job:
        """Queue the job and wait until it is done; its error, if any, is raised here."""
        with self._wake:
            if self._closed:
                raise EngineUnavailable("the embedded engine is closed")
            self._waiting.append(job)
            self._wake.notify()
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._closed and not self._waiting and not self._active():
                    self._wake.wait()
                if self._closed:
                    break
                admitted = []
                free = [slot for slot in self._slots if slot.job is None]
                while self._waiting and free:
                    job = self._waiting.popleft()
                    slot = max(free, key=lambda s: s.fit(job.prompt))
                    free.remove(slot)
                    slot.job = job
                    admitted.append(slot)
            for slot in admitted:
                self._guarded([slot], self._start)
            active = self._active()
            if active:
                self._guarded(active, self._step)
        for job in [*self._waiting, *(slot.job for slot in self._active())]:
            job.error = EngineUnavailable("the embedded engine was closed during the call")
            job.done.set()

    def _active(self) -> list[Slot]:
        return [slot for slot in self._slots if slot.job is not None]

    def _guarded(self, slots: list[Slot], action: Any) -> None:
        """Run `action(slots)`; a failure ends those slots' jobs with the error and empties their cache."""
        try:
            action(slots)
        except Exception as exc:
            error = exc if isinstance(exc, EngineError) else EngineUnavailable(f"embedded engine: {exc!r}")
            for slot in slots:
                if slot.job is not None:
                    slot.job.error = error
                    self._runtime.forget(slot.index, 0)
                    slot.tokens, slot.held = [], False
                    self._release(slot)

    def _start(self, slots: list[Slot]) -> None:
        """Evaluate the prompt past the cached prefix and pick a first token.

        At least the last two prompt tokens are evaluated again: llama.cpp computes a one-token batch
        another way than a longer one (the last token's logits moved by up to 0.5), so re-reading only
        the last token would make the text depend on what the slot held before.
        """
        (slot,) = slots
        job = slot.job
        assert job is not None
        started = time.perf_counter()
        job.started = started
        keep = shared_prefix(slot.tokens, job.prompt[:-2])
        self._runtime.forget(slot.index, keep)
        del slot.tokens[keep:]
        slot.prompt_length, slot.held = len(job.prompt), job.matcher is None
        self.timings.reused_tokens += keep
        rest = job.prompt[keep:]
        for begin in range(0, len(rest), BATCH):
            chunk = rest[begin : begin + BATCH]
            last = begin + len(chunk) == len(rest)
            base = len(slot.tokens)
            entries = [(t, base + i, slot.index, last and i == len(chunk) - 1) for i, t in enumerate(chunk)]
            self._runtime.decode(entries)
            slot.tokens.extend(chunk)
        self.timings.prefill_s += time.perf_counter() - started
        self._choose(slots, np.stack([self._runtime.logits(-1)]))

    def _step(self, slots: list[Slot]) -> None:
        """One llama_decode with the pending token of every active job, then one pick each."""
        started = time.perf_counter()
        entries = []
        for slot in slots:
            assert slot.job is not None
            entries.append((slot.job.next_token, len(slot.tokens), slot.index, True))
            slot.tokens.append(slot.job.next_token)
        self._runtime.decode(entries)
        rows = np.stack([self._runtime.logits(i) for i in range(len(slots))])
        self.timings.forward_s += time.perf_counter() - started
        self.timings.steps += 1
        self.timings.widest = max(self.timings.widest, len(slots))
        self._choose(slots, rows)

    def _choose(self, slots: list[Slot], rows: np.ndarray) -> None:
        """Mask the constrained rows in one batch, then pick, accept and finish each job."""
        jobs = [slot.job for slot in slots if slot.job is not None]
        constrained = [i for i, job in enumerate(jobs) if job.matcher is not None]
        if constrained:
            started = time.perf_counter()
            self._grammars().mask([jobs[i].matcher for i in constrained], rows, constrained)
            self.timings.mask_s += time.perf_counter() - started
        for slot, job, row in zip(slots, jobs, rows, strict=True):
            masked = row.copy() if job.matcher is not None else None
            try:
                token = (
                    pick(row, job.sampling, job.output, job.rng)
                    if job.forced is None
                    else self._forcer.next(job.forced, job.written, row)
                )
            except RequestRejected as exc:  # a forced answer the grammar does not allow: this job only
                job.error = exc
                self._release(slot)
                continue
            job.written += len(self._pieces[token])
            finish = self._finish_reason(job, token)
            if finish is None:
                job.output.append(token)
                job.pieces.append(job.text.decode(self._pieces[token]))
                if masked is not None:
                    logprob = masked_logprob(masked, token)
                    job.logprobs.append(logprob)
                    job.others.append(masked_alternatives(masked, token, logprob, SPELLINGS))
                self.timings.tokens += 1
                if len(job.output) >= job.budget:
                    finish = "length"
            if finish is None:
                job.next_token = token
            else:
                job.finish = finish
                self._release(slot)

    def _finish_reason(self, job: Job, token: int) -> FinishReason | None:
        """`stop` when the grammar (or, unconstrained, the model's end token) ends the text."""
        if job.matcher is not None:
            if not job.matcher.accept_token(token):
                return "error"
            return "stop" if job.matcher.is_terminated() else None
        return "stop" if token in self._stop_ids else None

    def _release(self, slot: Slot) -> None:
        job = slot.job
        assert job is not None
        tail = job.text.decode(b"", final=True)
        if tail and job.pieces:
            job.pieces[-1] += tail
        if job.others:  # the mass of every token that writes the same characters (tasks.engines.spelling)
            raw = [self._pieces[t] for t in job.output]
            others = [[(self._pieces[t], lp) for t, lp in step] for step in job.others]
            steps = list(zip(raw, job.logprobs, others, strict=True))
            job.logprobs, job.rivals, job.nulls = spelled_logprobs(steps)
        job.finished = time.perf_counter()
        self._finished += 1
        slot.freed = self._finished
        slot.job = None
        job.done.set()
