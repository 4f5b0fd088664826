"""Grounded decoding's cost per record: candidates plus a fresh XGrammar compile, p50/p99, by text length.

Each record's schema is new (its candidates), so the compiler's cache never helps: every record pays
`grounded_body` and one compile against the bundled model's vocabulary. Texts are gold records
joined until they reach each length (up to 6,000 characters), so candidate sets grow as in real
inboxes. Run: .venv/bin/python benchmarks/grounded_compile.py [--per-length 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines import open_engines
from formwork.tasks.settings import Settings

GOLD = Path(__file__).parent.parent / "examples" / "gold"
LENGTHS = (300, 1500, 3000, 6000)


def texts(schema: str, length: int, count: int) -> list[str]:
    lines = [json.loads(line)["text"] for line in (GOLD / f"{schema}.jsonl").read_text().splitlines()]
    out = []
    for start in range(count):
        text, i = "", start
        while len(text) < length:
            text += lines[i % len(lines)] + "\n"
            i += 1
        out.append(text[:length])
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-length", type=int, default=20)
    args = parser.parse_args()
    engine, _ = open_engines(Settings(engine="local"))
    grammars = engine._grammar()  # the engine's own compiler, vocabulary and cache
    for name in ("expense", "contact"):
        schema = load_schema(name)
        for length in LENGTHS:
            seconds, sizes = [], []
            for text in texts(name, length, args.per_length):
                started = time.perf_counter()
                body = ExtractOptions(grounded_decoding=True).formatting_grammar(schema, text, None)
                grammars.matcher(body)
                seconds.append(time.perf_counter() - started)
                sizes.append(sum(len(n.get("enum", [])) for n in body["properties"].values()))
            seconds.sort()
            p99 = seconds[min(len(seconds) - 1, round(0.99 * (len(seconds) - 1)))]
            print(f"{name} {length:>5} chars: candidates {statistics.median(sizes):.0f}, "
                  f"p50 {1000 * statistics.median(seconds):.1f} ms, p99 {1000 * p99:.1f} ms")  # fmt: skip
    engine.close()


if __name__ == "__main__":
    main()
