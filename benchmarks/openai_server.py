"""Records/s and agreement: the embedded engine against llama-cpp-python's OpenAI server, same gold records.

Both run the same model file (the bundled SmolLM2-135M GGUF), the same pipeline (`formwork.flows.api.extract`)
and the same settings, one record at a time, so the difference is the engine: in-process XGrammar masking
against llama.cpp's own grammar behind HTTP. Confidence agreement counts fields that got a confidence on
each side: the server's logprobs come before its grammar, so the `openai` engine claims none (fail closed).

    python benchmarks/openai_server.py --url http://127.0.0.1:8391/v1 --records 4
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from formwork.flows.api import extract
from formwork.tasks.settings import Settings

GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold" / "expense.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="llama-cpp-python server, ending in /v1")
    parser.add_argument("--records", type=int, default=4)
    args = parser.parse_args()
    texts = [json.loads(line)["text"] for line in GOLD.read_text().splitlines()[: args.records]]
    common = {"reasoning_max_tokens": 64, "max_attempts": 1, "local_slots": 1, "vllm_max_concurrency": 1}
    results = {}
    for name, settings in (
        ("embedded", Settings(engine="local", **common)),
        ("llama-cpp-python server", Settings(engine="openai", openai_url=args.url, **common)),
    ):
        extract(texts[:1], "expense", settings=settings)  # warm: model load, first compile
        started = time.perf_counter()
        rows = extract(texts, "expense", settings=settings)
        elapsed = time.perf_counter() - started
        results[name] = rows
        ok = sum(r.status == "ok" for r in rows)
        print(f"{name}: {len(rows) / elapsed:.3f} records/s, ok {ok}/{len(rows)}")
    same = sum(a.data == b.data for a, b in zip(*results.values(), strict=True))
    print(f"identical JSON on {same}/{len(texts)} records")


if __name__ == "__main__":
    main()
