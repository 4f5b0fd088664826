"""The framework at GPU-like speed, measured with a latency-model engine (an instrument, not an engine).

A GPU server answers many requests at once, each in about the same time. `LatencyModel` stands in for
it: every call sleeps `--latency` seconds and returns fixed text (schema-valid, grounded JSON for the
formatting pass), with up to `--in-flight` calls at once. What is left to measure is Formwork itself:
the real `batch_extract` flow, real Prefect, a real SQLite database, one attempt per record.

Reported, from one run:
- records/s from the first model call to the last, against the ideal in_flight / (2 x latency);
- the mean number of calls in flight (the ideal is --in-flight);
- framework CPU per record (this process's CPU time over the run / records);
- peak memory (max RSS), time spent in the database (storing input, claims, saving chunks);
- time to the first model call from the flow call, and Prefect's own share of it (the flow call until
  the flow body runs).

    python benchmarks/latency_model.py --records 10000 --in-flight 256 --latency 0.5
    python benchmarks/latency_model.py --records 2000 --chunk-size 1000
    python benchmarks/latency_model.py --db postgresql+psycopg://postgres@127.0.0.1:PORT/bench

The database time includes every write of finished records (`save_chunk`, called by each chunk's
writer within about a second of a record finishing) and is also given per record.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from formwork.flows.prefect_env import apply_defaults, without_heartbeat

apply_defaults()

from stages import StageClock  # benchmarks/stages.py, beside this script

import formwork.flows.batch_extract
import formwork.flows.chunk
import formwork.tasks.engines
from formwork.tasks.engines.base import Completion

TEXT = "Taxi to the airport, 20 EUR, Tom, 2024-03-03"
ANSWER = {"who": "Tom", "date": "2024-03-03", "amount": 20, "currency": "EUR", "category": "transport",
          "project": None}  # fmt: skip


class LatencyModel:
    """Sleeps `latency` seconds per call, answers fixed text; counts calls in flight."""

    model = "latency-model"

    def __init__(self, latency: float, in_flight: int) -> None:
        self.latency, self.max_concurrency = latency, in_flight
        self.lock = threading.Lock()
        self.first: float | None = None
        self.last = 0.0
        self.calls = 0

    def complete(self, messages: list, sampling: Any, schema: Any = None) -> Completion:
        started = time.perf_counter()
        with self.lock:
            self.first = self.first or started
            self.calls += 1
        time.sleep(self.latency)
        with self.lock:
            self.last = max(self.last, time.perf_counter())
        text = json.dumps(ANSWER) if schema is not None else "Tom paid 20 EUR for a taxi on 2024-03-03."
        return Completion(text, "stop", 40, 20, self.latency, self.model)


def _timed(module: Any, name: str, spent: list[float]) -> None:
    """Wrap module.name so that its wall time adds to spent[0] (the database's share)."""
    original: Callable = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    setattr(module, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--chunk-size", type=int, default=100)
    parser.add_argument("--db", help="a SQLAlchemy URL to an empty database (default: a new SQLite file)")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="formwork-latency-"))
    source = folder / "input.jsonl"
    source.write_text("".join(json.dumps({"id": f"r{i}", "text": f"{TEXT} #{i}"}) + "\n"
                              for i in range(args.records)))  # fmt: skip
    # one attempt; no calibration: the stand-in gives no logprobs, and its grounded answer earns ok
    os.environ.update(
        FORMWORK_MAX_ATTEMPTS="1", FORMWORK_CALIBRATION="false", FORMWORK_CONFIG=str(folder / "none.toml")
    )
    engine = LatencyModel(args.latency, args.in_flight)
    formwork.tasks.engines.open_engines = lambda settings, schema_body=None: (engine, engine)
    database = [0.0]
    _timed(formwork.flows.batch_extract, "store_records", database)
    _timed(formwork.flows.chunk, "claim_pending", database)
    _timed(formwork.flows.chunk, "save_chunk", database)
    body_started: list[float] = []
    flow_module = formwork.flows.batch_extract
    load = flow_module.load_checked_schema
    flow_module.load_checked_schema = lambda *a, **k: (body_started.append(time.perf_counter()),
                                                       load(*a, **k))[1]  # fmt: skip

    clock = StageClock()
    clock.install()
    cpu0, called = time.process_time(), time.perf_counter()
    with without_heartbeat():
        summary = formwork.flows.batch_extract.batch_extract(
            str(source),
            "expense",
            db_url=args.db or f"sqlite:///{folder / 'bench.db'}",
            chunk_size=args.chunk_size,
        )
    cpu = time.process_time() - cpu0
    assert engine.first is not None
    busy = engine.last - engine.first
    rate, ideal = args.records / busy, args.in_flight / (2 * args.latency)
    rows = [
        ("records", f"{args.records} ({summary.statuses})"),
        ("in flight allowed / latency per call", f"{args.in_flight} / {args.latency} s"),
        ("records/s, first call to last", f"{rate:.1f}"),
        ("ideal records/s", f"{ideal:.1f}"),
        ("share of ideal", f"{rate / ideal:.0%}"),
        ("mean calls in flight", f"{engine.calls * args.latency / busy:.0f}"),
        ("framework CPU per record", f"{1000 * cpu / args.records:.2f} ms"),
        *clock.rows(args.records, cpu),
        ("peak memory (max RSS)", f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"),
        ("database time (store, claims, saves; summed over threads)", f"{database[0]:.1f} s"),
        ("database time per record", f"{1000 * database[0] / args.records:.2f} ms"),
        ("flow call to first model call", f"{engine.first - called:.1f} s"),
        ("of which Prefect start-up (flow call to flow body)", f"{body_started[0] - called:.1f} s"),
        ("flow call to flow end", f"{time.perf_counter() - called:.1f} s"),
    ]
    print(f"chunk_size {args.chunk_size}; {platform.node()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}\n")  # fmt: skip
    print("| measure | value |\n| --- | ---: |")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
