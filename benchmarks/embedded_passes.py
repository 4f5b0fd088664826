"""Measure the embedded engine: against llama-cpp-python's own loop, and the grammar mask's share.

    .venv/bin/python benchmarks/embedded_passes.py [--rounds 3] [--tokens 128] [--records 6] [--threads N]

1. Decode speed against `Llama.create_completion` at the same thread count (generation and prompt),
   greedy, the same prompt and number of tokens; the two run in turns, round after round, so a noisy
   machine hits both alike. The figure that counts is the median of the per-round ratios (goal >= 95%).
2. Constrained against unconstrained decoding of the formatting prompt, the same number of tokens;
   the mask's share is the decode thread's time in XGrammar's fill plus applying the mask, over the
   constrained calls' decode time (goal <= 2%).
One slot here: this is the speed of one sequence; `embedded_slots.py` measures several.
"""

from __future__ import annotations

import argparse
import statistics
import time

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import load_schema
from formwork.tasks.engines.base import Sampling
from formwork.tasks.engines.cores import usable_cores
from formwork.tasks.engines.local import LocalEngine, bundled_model_path
from formwork.tasks.prompts import formatting_messages

STORY = [{"role": "user", "content": "Write a long story about a lighthouse keeper and a storm."}]
TEXTS = [
    "Lunch with the Acme team on 2024-03-14, paid $42.80 by Maria. Bill to project Apollo.",
    "Taxi from the airport to the hotel, 35 EUR, March 3rd 2024 (Tom)",
    "hotel 2 nights Berlin 2024-05-20 €310 — Priya, conference trip",
    "Bought a new keyboard for the office: £59.99 on 12 Jan 2024",
    "6月3日和客户吃晚饭，花了480元，项目：星河",
    "Train ticket Zurich-Geneva CHF 88, 2024-09-09, Lukas",
]


def against_llama_cpp(engine: LocalEngine, threads: int, tokens: int, rounds: int) -> None:
    import llama_cpp

    llama = llama_cpp.Llama(
        str(bundled_model_path()), n_ctx=4096, n_threads=threads, n_threads_batch=threads, verbose=False
    )
    prompt = engine.prompt_tokens(STORY)
    ours, theirs = [], []
    for _ in range(rounds):
        llama.reset()  # both evaluate the whole prompt each time
        started = time.perf_counter()
        reply = llama.create_completion(prompt, max_tokens=tokens, temperature=0.0)
        theirs.append(reply["usage"]["completion_tokens"] / (time.perf_counter() - started))
        engine.complete([{"role": "user", "content": "x"}], Sampling(1))  # evict the story's cache
        done = engine.complete(STORY, Sampling(tokens))
        ours.append(done.completion_tokens / done.duration_s)
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    print(f"| create_completion, {threads} threads | {statistics.median(theirs):.1f} |")
    print(f"| LocalEngine, {threads} threads | {statistics.median(ours):.1f} |")
    print(f"| ratio (median of {rounds} rounds: {', '.join(f'{r:.0%}' for r in ratios)}) "
          f"| {statistics.median(ratios):.0%} |")  # fmt: skip
    llama.close()


def mask_share(engine: LocalEngine, records: int) -> None:
    schema = load_schema("expense")
    budget = Sampling(format_budget(schema.body))
    counted = {"constrained": [0, 0.0], "unconstrained": [0, 0.0]}
    mask_s = 0.0
    for i in range(records):
        text = TEXTS[i % len(TEXTS)]
        prompt = formatting_messages(schema, text, text)
        for name in ("constrained", "unconstrained"):
            before = engine.timings.prefill_s, engine.timings.mask_s
            if name == "constrained":
                done = engine.complete(prompt, budget, schema.body)
                size = done.completion_tokens
            else:
                done = engine.complete(prompt, Sampling(size))
            decode_s = done.duration_s - (engine.timings.prefill_s - before[0])
            counted[name][0] += done.completion_tokens
            counted[name][1] += decode_s
            if name == "constrained":
                mask_s += engine.timings.mask_s - before[1]
    print("\n| decode after the prompt, formatting prompt | tokens | seconds | tokens/s |")
    print("| --- | ---: | ---: | ---: |")
    for name, (count, seconds) in counted.items():
        print(f"| {name} | {count} | {seconds:.2f} | {count / seconds:.1f} |")
    speed = {name: count / seconds for name, (count, seconds) in counted.items()}
    print(f"\nconstrained / unconstrained tokens/s: {speed['constrained'] / speed['unconstrained']:.0%}")
    per_token = mask_s / counted["constrained"][0] * 1e6
    print(f"mask fill + apply: {per_token:.0f} µs per token, "
          f"{mask_s / counted['constrained'][1]:.2%} of constrained decode time")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--records", type=int, default=6)
    parser.add_argument("--threads", type=int, default=usable_cores())
    args = parser.parse_args()
    engine = LocalEngine(n_threads=args.threads, slots=1)
    print(f"threads: {engine.threads}; greedy, {args.tokens} tokens\n")
    print("| engine | tokens/s |\n| --- | ---: |")
    against_llama_cpp(engine, args.threads, args.tokens, args.rounds)
    mask_share(engine, args.records)
    engine.close()


if __name__ == "__main__":
    main()
