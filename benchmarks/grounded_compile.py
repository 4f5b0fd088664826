"""Grounded decoding's cost per record against the formatting pass it serves, measured in one run.

Each record's schema is new (its candidates), so no compile cache ever helps: every record pays
`formatting_grammar` (the candidates) and one XGrammar compile. Per text length (300-6,000
characters; texts are gold records joined until they reach the length, a different start per record,
so candidate sets grow as in real inboxes) and per record:
- `cold`: candidates with the record's reading not yet done (dates and numbers read here);
- `shared`: candidates when the judge's reading of the same text exists (the pipeline's steady state
  from the second attempt on, and what grounded decoding adds once one reading serves both);
- `compile`: one fresh compile against the bundled model's vocabulary (the engine's own compiler);
- `pass`: the embedded formatting pass under the plain schema, its prompt prefix already in the slot's
  cache as after a reasoning pass (one untimed call first), greedy, the schema's budget.
The ratio is (candidates + compile) / pass, p50 and p99 over the records.

`--vllm URL` adds the server half: the same formatting requests, 8 in flight, rounds interleaved so
load drifts alike, under three schemas:
- `plain`: the schema as the user wrote it (warm in the server's compile cache);
- `cached`: each record's own grounded schema, sent once before (warm);
- `fresh`: the same grounded schema with a new `$comment` each round, so it is never in the cache but
  allows exactly the same tokens. Greedy outputs are then identical to `cached`, and the difference
  between the two is the server's compile cost alone, with equal-length outputs.

Run: .venv/bin/python benchmarks/grounded_compile.py [--per-length 5] [--vllm http://127.0.0.1:8011/v1]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from formwork.schemas.budget import format_budget
from formwork.schemas.registry import Schema, load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.engines import open_engines
from formwork.tasks.engines.base import Engine, Sampling
from formwork.tasks.grounding.spans import quote_spans
from formwork.tasks.grounding.values import record_values
from formwork.tasks.prompts import formatting_messages
from formwork.tasks.settings import Settings

logger = logging.getLogger("grounded_compile")
GROUNDED = ExtractOptions(grounded_decoding=True)
GOLD = Path(__file__).parent.parent / "examples" / "gold"
LENGTHS = (300, 1500, 3000, 6000)
NOTES = "I read the text above and noted the values it states."
KINDS = ("plain", "cached", "fresh")


def texts(schema: str, length: int, count: int) -> list[str]:
    lines = [json.loads(line)["text"] for line in (GOLD / f"{schema}.jsonl").read_text().splitlines()]
    out = []
    for start in range(count):
        text, i = "", 7 * start
        while len(text) < length:
            text += lines[i % len(lines)] + "\n"
            i += 1
        out.append(text[:length])
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def candidates(body: dict[str, Any]) -> int:
    return sum(len(n.get("enum", [])) for n in body["properties"].values() if n != {"type": "null"})


def embedded(per_length: int) -> None:
    engine, _ = open_engines(Settings(engine="local"))
    grammars = engine._grammar()  # the engine's own compiler, vocabulary and cache
    print(
        "| schema | chars | candidates | cold ms p50 / p99 | shared ms | compile ms | pass ms "
        "| shared+compile / pass, wall | same, CPU | cold+compile / pass, wall | same, CPU |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in ("expense", "contact"):
        schema = load_schema(name)
        GROUNDED.formatting_grammar(schema, texts(name, 300, 1)[0] + " warm-up", None)
        for length in LENGTHS:
            rows = []
            for text in texts(name, length, per_length):
                record_values.cache_clear()
                work = partial(GROUNDED.formatting_grammar, schema, text, None, NOTES)
                cold = timed(work)
                quote_spans.cache_clear()  # only the reading is shared with the judge, not the spans
                shared = timed(work)
                body = GROUNDED.formatting_grammar(schema, text, None, NOTES)
                compiled = timed(lambda body=body: grammars.matcher(body))
                rows.append((cold, shared, compiled, formatting_pass(engine, schema, text), candidates(body)))
            show(name, length, rows)
    engine.close()


def timed(work: Any) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) of `work()`: on a shared machine the CPU time is
    the part other processes cannot inflate."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def formatting_pass(engine: Engine, schema: Schema, text: str) -> tuple[float, float]:
    messages = formatting_messages(schema, text, NOTES)
    sampling = Sampling(format_budget(schema.grammar_body))
    engine.complete(messages, Sampling(1), schema.grammar_body)  # the prompt into the slot's cache
    took = timed(lambda: logger.info("formatting pass: %d tokens", engine.complete(
        messages, sampling, schema.grammar_body).completion_tokens))  # fmt: skip
    logger.info("  %.2f s wall, %.2f s CPU", *took)
    return took


def show(name: str, length: int, rows: list[Any]) -> None:
    """One row per schema and length: medians and p99 of wall times, and the share of the pass in
    wall time and in CPU time (the machine is shared: see the module docstring)."""
    cold, shared, compiled, passes, sizes = (list(column) for column in zip(*rows, strict=True))

    def ms(values: list[tuple[float, float]]) -> str:
        walls = [w for w, _ in values]
        return f"{1000 * statistics.median(walls):.0f} / {1000 * pct(walls, 0.99):.0f}"

    def share(first: list[tuple[float, float]], kind: int) -> str:
        ratios = [(a[kind] + c[kind]) / p[kind] for a, c, p in zip(first, compiled, passes, strict=True)]
        return f"{statistics.median(ratios):.1%} / {pct(ratios, 0.99):.1%}"

    print(f"| {name} | {length:,} | {statistics.median(sizes):.0f} | {ms(cold)} | {ms(shared)} "
          f"| {ms(compiled)} | {ms(passes)} | {share(shared, 0)} | {share(shared, 1)} "
          f"| {share(cold, 0)} | {share(cold, 1)} |",
          flush=True)  # fmt: skip


def served(url: str, rounds: int, per_schema: int) -> None:
    from formwork.tasks.engines.vllm_server import VllmServerEngine

    engine = VllmServerEngine(url, None, max_concurrency=8, timeout_s=600)
    jobs = []
    for name in ("expense", "contact"):
        schema = load_schema(name)
        for length in (300, 1500):
            for text in texts(name, length, per_schema // 2):
                grounded = GROUNDED.formatting_grammar(schema, text, None, NOTES)
                jobs.append((formatting_messages(schema, text, NOTES), schema, grounded))

    def batch(kind: str, salt: str = "") -> tuple[float, list[float], list[str]]:
        def one(job: tuple[Any, Schema, dict[str, Any]]) -> tuple[float, str]:
            messages, schema, own = job
            body = {"plain": schema.grammar_body, "cached": own, "fresh": {**own, "$comment": salt}}[kind]
            result = engine.complete(messages, Sampling(format_budget(schema.grammar_body)), body)
            return result.duration_s, result.text

        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            done = list(pool.map(one, jobs))
        return time.perf_counter() - started, [d for d, _ in done], [t for _, t in done]

    batch("plain")  # the plain schemas into the compile cache, the prompts into the prefix cache
    _, _, expected = batch("cached")  # the grounded schemas into the compile cache
    walls: dict[str, list[float]] = {kind: [] for kind in KINDS}
    latencies: dict[str, list[float]] = {kind: [] for kind in KINDS}
    same = 0
    for round_ in range(rounds):
        for kind in KINDS:
            wall, each, outputs = batch(kind, salt=f"round {round_} {time.time_ns()}")
            walls[kind].append(wall)
            latencies[kind] += each
            if kind == "fresh":
                same += sum(a == b for a, b in zip(outputs, expected, strict=True))
    engine.close()
    print(f"\nvLLM {url}: {len(jobs)} formatting requests, 8 in flight, {rounds} rounds each")
    for kind in KINDS:
        each = latencies[kind]
        print(f"- {kind}: batch wall {statistics.median(walls[kind]):.1f} s (rounds: "
              f"{', '.join(f'{w:.1f}' for w in walls[kind])}), request p50 "
              f"{statistics.median(each):.2f} s, p99 {pct(each, 0.99):.2f} s")  # fmt: skip
    print(f"- fresh outputs identical to cached: {same} of {rounds * len(jobs)}")
    compile_cost = statistics.median(walls["fresh"]) / statistics.median(walls["cached"]) - 1
    against_plain = statistics.median(walls["fresh"]) / statistics.median(walls["plain"]) - 1
    print(f"- the server's compile cost (fresh against cached, equal outputs): {compile_cost:+.1%} wall")
    print(f"- per-record schemas against the plain schema: {against_plain:+.1%} batch wall")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-length", type=int, default=5)
    parser.add_argument("--vllm", help="a vLLM server's /v1 URL: also measure the server half")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=8, help="per schema, for the server half")
    parser.add_argument("--skip-embedded", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logger.setLevel(logging.INFO)
    if not args.skip_embedded:
        embedded(args.per_length)
    if args.vllm:
        served(args.vllm, args.rounds, args.requests)


if __name__ == "__main__":
    main()
