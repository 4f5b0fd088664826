"""Records per second through both passes with 1, 2, 4 and 8 slots on the embedded engine.

    .venv/bin/python benchmarks/embedded_slots.py [--records 8] [--reasoning-tokens 128] [--slots 1 2 4 8]

Each slot count gets a fresh engine and runs the same records as the pipeline does (tasks.extract, a
record per thread, as many threads as slots). All counts run in one process, one after the other,
so compare them as ratios; the machine's load during the run is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from formwork.schemas.registry import Schema, load_schema
from formwork.tasks.calls import ExtractOptions, Outcome
from formwork.tasks.engines.base import Sampling
from formwork.tasks.engines.local import LocalEngine
from formwork.tasks.extract import extract_record

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "expenses.jsonl"


def readable(line: str) -> str:
    """The record's text, or "" for the examples' deliberately broken and empty lines."""
    try:
        return str(json.loads(line).get("text") or "")
    except (json.JSONDecodeError, AttributeError):
        return ""


def one_record(engine: LocalEngine, schema: Schema, options: ExtractOptions, job: tuple[int, str]) -> Outcome:
    return extract_record(job[0], job[1], schema, engine, engine, options)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=8)
    parser.add_argument("--reasoning-tokens", type=int, default=128)
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--threads", type=int, default=None, help="default: the usable cores")
    args = parser.parse_args()
    lines = [text for line in EXAMPLES.read_text().splitlines() if (text := readable(line))]
    texts = [lines[i % len(lines)] for i in range(args.records)]
    schema = load_schema("expense")
    options = ExtractOptions(reasoning_max_tokens=args.reasoning_tokens, max_attempts=1)
    print(f"{len(texts)} records of {EXAMPLES.name}, reasoning budget {args.reasoning_tokens}, "
          f"threads {args.threads or 'all usable cores'}\n")  # fmt: skip
    print("| slots | seconds | records/s | tokens/s | widest step | load (1 min) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    base = None
    for slots in args.slots:
        engine = LocalEngine(slots=slots, n_threads=args.threads)
        engine.complete([{"role": "user", "content": "hi"}], Sampling(2))
        started = time.perf_counter()
        tokens_before = engine.timings.tokens
        with ThreadPoolExecutor(slots) as pool:
            outcomes = list(pool.map(partial(one_record, engine, schema, options), enumerate(texts)))
        seconds = time.perf_counter() - started
        rate = len(outcomes) / seconds
        base = base or rate
        tokens = engine.timings.tokens - tokens_before
        print(f"| {slots} | {seconds:.1f} | {rate:.3f} ({rate / base:.2f}x) | {tokens / seconds:.1f} "
              f"| {engine.timings.widest} | {os.getloadavg()[0]:.1f} |", flush=True)  # fmt: skip
        engine.close()


if __name__ == "__main__":
    main()
