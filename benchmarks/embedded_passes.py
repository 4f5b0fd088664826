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


class MaskClock:
    """Wraps the engine's mask and matcher calls to add up the time the grammar costs per token."""

    def __init__(self) -> None:
        self.seconds = 0.0
        original = local._TokenMask.apply

        def timed_apply(mask, matcher, logits):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            original(mask, matcher, logits)
            self.seconds += time.perf_counter() - started

        local._TokenMask.apply = timed_apply  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=12)
    parser.add_argument("--reasoning-tokens", type=int, default=128)
    args = parser.parse_args()

    schema = load_schema("expense")
    clock = MaskClock()
    started = time.perf_counter()
    engine = local.LocalEngine()
    load_s = time.perf_counter() - started
    texts = [TEXTS[i % len(TEXTS)] for i in range(args.records)]
    engine.complete(
        formatting_messages(schema, texts[0], texts[0]), Sampling(8), schema.body
    )  # compile, warm
    clock.seconds = 0.0

    totals = {"reasoning": [0, 0.0], "formatting": [0, 0.0], "unconstrained": [0, 0.0]}
    for text in texts:
        notes = engine.complete(
            reasoning_messages(schema, text), Sampling(args.reasoning_tokens, repetition_penalty=1.3)
        )
        prompt = formatting_messages(schema, text, notes.text)
        shaped = engine.complete(prompt, Sampling(format_budget(schema.body)), schema.body)
        free = engine.complete(prompt, Sampling(shaped.completion_tokens))
        for name, done in (("reasoning", notes), ("formatting", shaped), ("unconstrained", free)):
            totals[name][0] += done.completion_tokens
            totals[name][1] += done.duration_s

    print(f"model load: {load_s:.1f} s; {args.records} records of the expense schema\n")
    print("| pass | tokens | seconds | tokens/s |")
    print("| --- | ---: | ---: | ---: |")
    for name, (tokens, seconds) in totals.items():
        print(f"| {name} | {tokens} | {seconds:.1f} | {tokens / seconds:.1f} |")
    share = clock.seconds / totals["formatting"][1]
    per_token_us = clock.seconds / max(totals["formatting"][0], 1) * 1e6
    print(f"\nmask fill + apply: {clock.seconds * 1000:.0f} ms in all, {per_token_us:.0f} µs per token,")
    print(f"{share:.2%} of the formatting pass's decode time (target <= 2%)")
    ratio = totals["formatting"][1] / totals["reasoning"][1]
    print(f"formatting pass wall time / reasoning pass wall time: {ratio:.0%}")


if __name__ == "__main__":
    main()
