"""Measure the embedded engine: tokens/s of each pass, and the grammar mask's share of decode time.

    .venv/bin/python benchmarks/embedded_passes.py [--records 12] [--reasoning-tokens 128]

Both passes run on the same records in one process, so the figures compare as ratios. The mask's
share is the time spent filling and applying XGrammar's bitmask divided by
the formatting pass's whole decode time; the target is at most 2%.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schemas.budget import format_budget
from schemas.registry import load_schema
from tasks.engines import local
from tasks.engines.base import Sampling
from tasks.prompts import formatting_messages, reasoning_messages

TEXTS = [
    "Lunch with the Acme team on 2024-03-14, paid $42.80 by Maria. Bill to project Apollo.",
    "Taxi from the airport to the hotel, 35 EUR, March 3rd 2024 (Tom)",
    "hotel 2 nights Berlin 2024-05-20 €310 — Priya, conference trip",
    "Bought a new keyboard for the office: £59.99 on 12 Jan 2024",
    "6月3日和客户吃晚饭，花了480元，项目：星河",
    "Train ticket Zurich-Geneva CHF 88, 2024-09-09, Lukas",
]


class Clock:
    """Adds up where the engine's time goes: the grammar mask, and prompt evaluation (prefill)."""

    def __init__(self) -> None:
        self.mask_s = 0.0
        self.prefill_s = 0.0
        apply, prefill = local._TokenMask.apply, local.LocalEngine._eval_prompt

        def timed_apply(mask, matcher, logits):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            apply(mask, matcher, logits)
            self.mask_s += time.perf_counter() - started

        def timed_prefill(engine, prompt):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            prefill(engine, prompt)
            self.prefill_s += time.perf_counter() - started

        local._TokenMask.apply = timed_apply  # type: ignore[method-assign]
        local.LocalEngine._eval_prompt = timed_prefill  # type: ignore[method-assign]

    def measure(self, complete, *args):  # type: ignore[no-untyped-def]
        """Run one call; return its Completion and the seconds it spent decoding (after the prompt)."""
        self.prefill_s = 0.0
        done = complete(*args)
        return done, done.duration_s - self.prefill_s


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=12)
    parser.add_argument("--reasoning-tokens", type=int, default=128)
    args = parser.parse_args()

    schema = load_schema("expense")
    clock = Clock()
    started = time.perf_counter()
    engine = local.LocalEngine()
    load_s = time.perf_counter() - started
    texts = [TEXTS[i % len(TEXTS)] for i in range(args.records)]
    engine.complete(
        formatting_messages(schema, texts[0], texts[0]), Sampling(8), schema.body
    )  # compile, warm
    budget = Sampling(format_budget(schema.body))

    wall = {"reasoning": [0, 0.0], "formatting": [0, 0.0]}
    decode = {"constrained": [0, 0.0], "unconstrained": [0, 0.0]}
    mask_s = 0.0
    for text in texts:
        notes = engine.complete(
            reasoning_messages(schema, text), Sampling(args.reasoning_tokens, repetition_penalty=1.3)
        )
        prompt = formatting_messages(schema, text, notes.text)
        shaped = engine.complete(prompt, budget, schema.body)  # as the pipeline runs it: prefix cached
        for name, done in (("reasoning", notes), ("formatting", shaped)):
            wall[name][0] += done.completion_tokens
            wall[name][1] += done.duration_s
        # decode speed with and without the grammar, same prompt, same number of tokens
        clock.mask_s = 0.0
        constrained, seconds = clock.measure(engine.complete, prompt, budget, schema.body)
        mask_s += clock.mask_s
        decode["constrained"][0] += constrained.completion_tokens
        decode["constrained"][1] += seconds
        free, seconds = clock.measure(engine.complete, prompt, Sampling(constrained.completion_tokens))
        decode["unconstrained"][0] += free.completion_tokens
        decode["unconstrained"][1] += seconds

    print(f"model load: {load_s:.1f} s; {args.records} records of the expense schema\n")
    print("| pass, as the pipeline runs it (prompt included) | tokens out | seconds | tokens/s |")
    print("| --- | ---: | ---: | ---: |")
    for name, (tokens, seconds) in wall.items():
        print(f"| {name} | {tokens} | {seconds:.1f} | {tokens / seconds:.1f} |")
    print("\n| decode only (after the prompt) | tokens | seconds | tokens/s |")
    print("| --- | ---: | ---: | ---: |")
    for name, (tokens, seconds) in decode.items():
        print(f"| {name} | {tokens} | {seconds:.1f} | {tokens / seconds:.1f} |")
    share = mask_s / decode["constrained"][1]
    per_token_us = mask_s / max(decode["constrained"][0], 1) * 1e6
    print(f"\nmask fill + apply: {per_token_us:.0f} µs per token, {share:.2%} of constrained decode time")
    print(f"formatting wall / reasoning wall: {wall['formatting'][1] / wall['reasoning'][1]:.0%}")


if __name__ == "__main__":
    main()
