"""The sampling ablation: schema-valid outputs out of 24, one chat setting added at a time.

    .venv/bin/python benchmarks/sampling_ablation.py [--per-schema 6] [--max-tokens 256]

24 records (6 from each built-in gold set), one call each (no retries), in `prompt-json` (no grammar,
parsing ladder) and `one-pass` (constrained), with the guard off and on. The guard only touches
constrained calls, so `prompt-json` with the guard on equals the guard off and is not run twice.
Schema-valid means the call's JSON (after the parsing ladder in `prompt-json`) passes the schema, as in
the published table; grounding is not counted, because since it landed a value it nulls makes the
stored row a `schema_mismatch`, which measures grounding rather than sampling. A guarded constrained
call runs with the greedy settings, so a guard-on cell whose guarded settings equal a cell already
measured reuses that count instead of decoding the same greedy answers again. The published shape
(Llama 3.2 1B / SmolLM2 360M) is printed beside ours.
top_k and no_repeat_ngram_size need an engine that implements them (the embedded engine after
issue 11; vLLM supports both).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines import open_engines
from formwork.tasks.engines.base import Sampling
from formwork.tasks.modes import extract_single_pass
from formwork.tasks.parsing import parse_ladder
from formwork.tasks.presets import guard
from formwork.tasks.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
STEPS = [
    ("greedy", Sampling()),
    ("+ temperature 0.75", Sampling(temperature=0.75)),
    ("+ repetition penalty 1.12", Sampling(temperature=0.75, repetition_penalty=1.12)),
    ("+ no_repeat_ngram_size 3", Sampling(temperature=0.75, repetition_penalty=1.12, no_repeat_ngram_size=3)),
    ("all chat settings", Sampling(temperature=0.75, top_p=0.9, top_k=40, repetition_penalty=1.12,
                                   no_repeat_ngram_size=3)),
]  # fmt: skip
PUBLISHED = {"greedy": "18 / 7", "+ temperature 0.75": "19 / 9", "+ repetition penalty 1.12": "16 / 9",
             "+ no_repeat_ngram_size 3": "1 / 0", "all chat settings": "0 / 0"}  # fmt: skip


def records(per_schema: int) -> list[tuple[str, str, dict]]:
    chosen = []
    for name in ("expense", "contact", "chat_tag", "shopping_list"):
        lines = (ROOT / "examples" / "gold" / f"{name}.jsonl").read_text().splitlines()[:per_schema]
        chosen += [(name, row["text"], row["gold"]) for row in map(json.loads, lines)]
    return chosen


def schema_valid(schema, mode: str, output: str) -> bool:
    """Whether the call's answer is JSON that passes the schema, before grounding judges its values."""
    if mode == "prompt-json":
        data, _ = parse_ladder(output)
    else:
        try:
            data = json.loads(output)
        except json.JSONDecodeError:
            return False
    return isinstance(data, dict) and schema.validator.is_valid(data)


def valid_count(engine, rows, mode: str, sampling: Sampling, guard_on: bool, max_tokens: int) -> int:
    options = ExtractOptions(mode=mode, max_attempts=1, format_max_tokens=max_tokens,
                             allow_chat_in_constrained=not guard_on)  # fmt: skip
    valid = 0
    for number, (name, text, _gold) in enumerate(rows, start=1):
        schema = load_schema(name)
        outcome = extract_single_pass(number, text, schema, engine, options, replace(sampling, seed=number))
        valid += bool(outcome.calls) and schema_valid(schema, mode, outcome.calls[-1].output)
    return valid


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-schema", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()
    engine, _ = open_engines(Settings())
    rows = records(args.per_schema)
    print(f"{engine.model}, {len(rows)} records, max_tokens {args.max_tokens}, one call each")
    print("| setting | published (1B / 360M) | prompt-json | one-pass, guard off | one-pass, guard on |")
    print("|---|---|---|---|---|")
    measured: dict[tuple[str, str], int] = {}

    def cell(mode: str, sampling: Sampling, guard_on: bool) -> int:
        effective = guard(sampling) if guard_on else sampling
        key = (mode, repr(effective))
        if key not in measured:
            measured[key] = valid_count(engine, rows, mode, sampling, guard_on, args.max_tokens)
        return measured[key]

    for label, sampling in STEPS:
        counts = [cell("prompt-json", sampling, False), cell("one-pass", sampling, False),
                  cell("one-pass", sampling, True)]  # fmt: skip
        print(f"| {label} | {PUBLISHED[label]} | " + " | ".join(f"{c} / {len(rows)}" for c in counts) + " |",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
