"""CPU time per stage of the framework's own work, for the latency-model benchmark (section 7).

Each stage is a set of functions wrapped so that the CPU time of the calling thread (`thread_time`,
not wall time: the record threads take turns under one interpreter lock, and a turn spent waiting
for the lock is no stage's) adds to that stage, exclusive of the stages nested inside it: the reading
of a record's numbers and dates is counted as reading whether the grammar or the judge asked first.

Stages: reading (the number and date readers, the folded text), candidates (the grounded grammar
built from them), judge (validation, grounding, confidence), storing (input, claims, saved chunks),
and the rest of the process (Prefect, prompts, threads, the engine stand-in) as "other".
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import formwork.flows.batch_extract
import formwork.flows.chunk
import formwork.tasks.calls
import formwork.tasks.extract
import formwork.tasks.grounding.evidence
import formwork.tasks.grounding.values
import formwork.tasks.modes

READERS = ("stated_reference", "cjk_readings", "month_day_spans", "numeric_readings", "digit_readings",
           "han_readings", "word_readings", "day_part_readings", "ordinal_readings",
           "ordinal_day_spans")  # fmt: skip
STAGES: dict[str, list[tuple[Any, str]]] = {
    "reading": [
        *((formwork.tasks.grounding.values, name) for name in READERS),
        (formwork.tasks.grounding.values.WrittenDates, "readings"),
        (formwork.tasks.grounding.evidence, "_fold"),
    ],
    "candidates": [(formwork.tasks.calls, "grounded_body")],
    "judge": [(formwork.tasks.extract, "judge"), (formwork.tasks.modes, "judge")],
    "storing": [
        (formwork.flows.batch_extract, "store_records"),
        (formwork.flows.chunk, "claim_pending"),
        (formwork.flows.chunk, "save_chunk"),
    ],
}


class StageClock:
    """Exclusive CPU seconds per stage, summed over threads."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.lock = threading.Lock()
        self.local = threading.local()

    def install(self) -> None:
        for stage, places in STAGES.items():
            for owner, name in places:
                if hasattr(owner, name):
                    setattr(owner, name, self._wrapped(stage, getattr(owner, name)))

    def _wrapped(self, stage: str, original: Callable) -> Callable:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            stack = self.local.__dict__.setdefault("stack", [])
            started, nested = time.thread_time(), 0.0
            stack.append(0.0)
            try:
                return original(*args, **kwargs)
            finally:
                nested = stack.pop()
                total = time.thread_time() - started
                with self.lock:
                    self.spent[stage] += total - nested
                if stack:
                    stack[-1] += total  # the caller's stage excludes this one

        return wrapper

    def rows(self, records: int, cpu: float) -> list[tuple[str, str]]:
        staged = sum(self.spent.values())
        rows = [(f"  {stage}", f"{1000 * self.spent[stage] / records:.2f} ms") for stage in STAGES]
        return [*rows, ("  other (Prefect, prompts, threads, engine stand-in)",
                        f"{1000 * (cpu - staged) / records:.2f} ms")]  # fmt: skip
