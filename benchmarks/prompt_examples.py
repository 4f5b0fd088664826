"""Seconds per record with and without solved examples in the prompt, on the embedded engine.

    .venv/bin/python benchmarks/prompt_examples.py [--records 5] [--rounds 1] [--model PATH]

The expense schema as shipped (the text first, then the field guide) against the same schema with two
solved examples (`x-examples`; the guide and the examples first, then the text: tasks/prompts.py), on
the first `--records` records of examples/gold/expense.jsonl, two-pass with the run's default options,
one record at a time. The layouts run in turns, plain, examples, examples, plain per round, so a
machine that slows down or speeds up mid-run hits both alike; the engine (and its slots' cache) is
shared, as in a run. Per layout: seconds per record, prompt tokens per record, the prompt tokens the
slots' cache held (not evaluated again), prefill seconds, generated tokens, and the records `ok`. The
figure that counts is the ratio of seconds per record (the issue's goal: within 1.3x).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formwork.schemas.registry import Schema, load_schema, schema_from_body
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines.local import LocalEngine
from formwork.tasks.extract import extract_record

GOLD = Path(__file__).resolve().parent.parent / "examples" / "gold" / "expense.jsonl"
# Written for this benchmark, not taken from the gold set, so no measured record is its own example.
EXAMPLES = [
    {"text": "Parking at the client's site, 14 GBP on 2024-02-09, paid by Jonas for the Orion account.",
     "answer": {"who": "Jonas", "date": "2024-02-09", "amount": 14, "currency": "GBP",
                "category": "transport", "project": "Orion"}},
    {"text": "Renewed the design tool licence: $120 a year.",
     "answer": {"who": None, "date": None, "amount": 120, "currency": "USD", "category": "software",
                "project": None}},
]  # fmt: skip


@dataclass
class Tally:
    """What one layout's records cost, summed over the rounds."""

    seconds: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    reused_tokens: int = 0
    prefill_s: float = 0.0
    generated: int = 0
    ok: int = 0


def run_block(engine: LocalEngine, schema: Schema, records: list[dict[str, Any]], tally: Tally) -> None:
    """Extract each record once under `schema`, adding its cost to `tally`."""
    options = ExtractOptions()
    for number, record in enumerate(records):
        reused, prefill = engine.timings.reused_tokens, engine.timings.prefill_s
        started = time.perf_counter()
        outcome = extract_record(number, record["text"], schema, engine, engine, options)
        tally.seconds.append(time.perf_counter() - started)
        tally.reused_tokens += engine.timings.reused_tokens - reused
        tally.prefill_s += engine.timings.prefill_s - prefill
        tally.prompt_tokens += sum(c.prompt_tokens for c in outcome.calls)
        tally.generated += sum(c.completion_tokens for c in outcome.calls)
        tally.ok += outcome.verdict.status == "ok"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file; the bundled model if none")
    args = parser.parse_args()
    lines = GOLD.read_text(encoding="utf-8").splitlines()[: args.records]
    records = [json.loads(line) for line in lines]
    plain = load_schema("expense")
    taught = schema_from_body({**plain.body, "x-examples": EXAMPLES}, "expense with two examples")
    engine = LocalEngine(args.model) if args.model else LocalEngine()
    layouts = {"text first, no examples": (plain, Tally()), "guide and 2 examples first": (taught, Tally())}
    (a, first), (b, second) = layouts.values()
    for _ in range(args.rounds):
        for schema, tally in ((a, first), (b, second), (b, second), (a, first)):
            run_block(engine, schema, records, tally)
    threads = engine.threads  # read before closing: a closed context has none
    engine.close()
    print(f"{engine.model}, {threads} threads, {args.records} records x {2 * args.rounds} per layout\n")
    print(
        "| layout | s/record (mean) | median | prompt tokens/record | cached | prefill s | generated | ok |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (_, t) in layouts.items():
        count = len(t.seconds)
        print(f"| {name} | {statistics.mean(t.seconds):.2f} | {statistics.median(t.seconds):.2f} | "
              f"{t.prompt_tokens / count:.0f} | {t.reused_tokens / max(t.prompt_tokens, 1):.0%} | "
              f"{t.prefill_s:.1f} | {t.generated} | {t.ok}/{count} |")  # fmt: skip
    ratio = statistics.mean(second.seconds) / statistics.mean(first.seconds)
    print(f"\nseconds per record, with examples / without: {ratio:.2f}x")


if __name__ == "__main__":
    main()
