"""Records/s and agreement: the embedded engine against llama-cpp-python's OpenAI server, same gold records.

Both run the same model file (the bundled SmolLM2-135M GGUF), the same pipeline (`formwork.flows.api.extract`)
and the same settings, one record at a time, so the difference is the engine: in-process XGrammar masking
against llama.cpp's own grammar behind HTTP. The server's logprobs come before its grammar; the
`openai` engine renormalises them over the values the grammar allowed (`tasks.confidence.renormalise`),
and claims none where it cannot. Agreement is measured on the values both engines wrote alike and both
gave a confidence: mean absolute difference, and the share within 0.05.

    python benchmarks/openai_server.py --url http://127.0.0.1:8391/v1 --records 4 [--schema chat_tag]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from formwork.flows.api import Extracted, extract
from formwork.tasks.settings import Settings

GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold"


def confidences(row: Extracted) -> dict[str, tuple[object, float, str]]:
    """Per value path: (value, confidence, logprob mode), for the values that have a confidence."""
    return {e["path"]: (e["value"], e["confidence"], e.get("logprob_mode", "?"))
            for e in row.evidence if e.get("confidence") is not None}  # fmt: skip


def agreement(pairs: list[tuple[Extracted, Extracted]]) -> str:
    """How closely the two engines' confidences agree on the values they both wrote and both scored."""
    firsts, seconds = [confidences(a) for a, _ in pairs], [confidences(b) for _, b in pairs]
    diffs = [abs(mine[p][1] - theirs[p][1]) for mine, theirs in zip(firsts, seconds, strict=True)
             for p in mine.keys() & theirs.keys() if mine[p][0] == theirs[p][0]]  # fmt: skip
    values = [sum(len(c) for c in side) for side in (firsts, seconds)]
    if not diffs:
        return f"values with a confidence: {values[0]} vs {values[1]}; none in common"
    within = sum(d <= 0.05 for d in diffs) / len(diffs)
    return (f"values with a confidence: {values[0]} vs {values[1]}; {len(diffs)} written alike by both: "
            f"mean |difference| {sum(diffs) / len(diffs):.3f}, max {max(diffs):.3f}, "
            f"{within:.0%} within 0.05")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="llama-cpp-python server, ending in /v1")
    parser.add_argument("--records", type=int, default=4)
    parser.add_argument("--schema", default="expense", help="a built-in schema with a gold set")
    args = parser.parse_args()
    lines = (GOLD / f"{args.schema}.jsonl").read_text().splitlines()[: args.records]
    texts = [json.loads(line)["text"] for line in lines]
    common = {"reasoning_max_tokens": 64, "max_attempts": 1, "local_slots": 1, "vllm_max_concurrency": 1}
    results = {}
    for name, settings in (
        ("embedded", Settings(engine="local", **common)),
        ("llama-cpp-python server", Settings(engine="openai", openai_url=args.url, **common)),
    ):
        extract(texts[:1], args.schema, settings=settings)  # warm: model load, first compile
        started = time.perf_counter()
        rows = extract(texts, args.schema, settings=settings)
        elapsed = time.perf_counter() - started
        results[name] = rows
        ok = sum(r.status == "ok" for r in rows)
        print(f"{name}: {len(rows) / elapsed:.3f} records/s, ok {ok}/{len(rows)}")
    pairs = zip(*results.values(), strict=True)
    same = sum((a.data or a.unchecked) == (b.data or b.unchecked) for a, b in pairs)  # failed rows too
    print(f"identical JSON on {same}/{len(texts)} records")
    print(agreement(list(zip(*results.values(), strict=True))))


if __name__ == "__main__":
    main()
