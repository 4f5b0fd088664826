"""The framework's CPU per record as the records in flight grow, and what the `regex` module's lock
hand-over costs (issue 31).

A GPU server keeps 64 to 256 records in flight, each on its own thread between its model calls. This
runs the real record path (`extract_safely`: both passes' prompts, the record's grounded grammar, the
judge) behind `latency_model.LatencyModel`, at several in-flight counts, and reports each record's own
thread CPU time (`time.thread_time`, median), beside a fixed pure-Python reference timed on the same
threads. Then the same short `regex` match, run by 1 and by 64 threads, with the module's default
(it lets go of the interpreter lock for every match) and with `concurrent=False`.

    python benchmarks/in_flight_cpu.py
    python benchmarks/in_flight_cpu.py --records-per-thread 4 --in-flight 1,16,64,256
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from statistics import median
from typing import Any

import regex
from latency_model import TEXT, LatencyModel  # benchmarks/latency_model.py, beside this script

from formwork.schemas.registry import load_schema
from formwork.tasks.calls import ExtractOptions
from formwork.tasks.extract import extract_safely
from formwork.tasks.grounding.spans import WORD

OPTIONS = ExtractOptions(grounded_decoding=True, max_attempts=1)


def thread_ms(work: Callable[[], Any]) -> float:
    started = time.thread_time()
    work()
    return 1000 * (time.thread_time() - started)


def reference(body: dict[str, Any]) -> None:
    """The guard's reference workload (tests/test_framework_budget.py): JSON, regular expressions, dicts."""
    for _ in range(10):
        words = re.findall(r"\w+", json.dumps(json.loads(json.dumps(body))) + TEXT)
        sorted({word.lower(): len(word) for word in words}.items())


def records_at(in_flight: int, per_thread: int) -> tuple[float, float]:
    """Median thread CPU per record and per reference, `in_flight` records at once."""
    schema, engine = load_schema("expense"), LatencyModel(0.05, in_flight)

    def one(i: int) -> tuple[float, float]:
        record = thread_ms(lambda: extract_safely(i, f"{TEXT} #{i}", schema, (engine, engine), OPTIONS))
        return record, thread_ms(lambda: reference(schema.body))

    with ThreadPoolExecutor(in_flight) as pool:
        timed = list(pool.map(one, range(in_flight * per_thread)))
    return median(t[0] for t in timed), median(t[1] for t in timed)


def matches_at(threads: int, concurrent: bool | None) -> float:
    """Median thread CPU (ms) of 300 short matches per thread, `threads` at once, each thread pausing
    now and then as a record does while it waits for the model."""

    def matches() -> None:
        for k in range(300):
            [m.group() for m in WORD.finditer(TEXT, concurrent=concurrent)]
            if k % 50 == 0:
                time.sleep(0.001)

    with ThreadPoolExecutor(threads) as pool:
        return median(pool.map(lambda _: thread_ms(matches), range(2 * threads)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--in-flight", default="1,4,16,64,256", help="comma-separated in-flight counts")
    parser.add_argument("--records-per-thread", type=int, default=4)
    args = parser.parse_args()
    records_at(4, 2)  # warm: the language model, dateparser's locales, compiled patterns
    print(f"{platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}, regex "
          f"{regex.__version__}\n")  # fmt: skip
    print("| records in flight | framework CPU per record (ms) | reference (ms) | ratio |")
    print("|---:|---:|---:|---:|")
    for in_flight in (int(n) for n in args.in_flight.split(",")):
        record, ref = records_at(in_flight, args.records_per_thread)
        print(f"| {in_flight} | {record:.2f} | {ref:.2f} | {record / ref:.1f} |")
    print("\n| 300 short `regex` matches | 1 thread (ms) | 64 threads (ms) |\n|---|---:|---:|")
    for concurrent in (None, False):
        alone, crowded = matches_at(1, concurrent), matches_at(64, concurrent)
        print(f"| concurrent={concurrent} | {alone:.2f} | {crowded:.2f} |")


if __name__ == "__main__":
    main()
