"""The embedded engine's decode speed alone and beside one busy process, per thread setting (issue 28).

    .venv/bin/python benchmarks/busy_core.py [--rounds 3] [--tokens 128]

For 1 thread, 2 threads and the default (one thread per core that other processes leave free,
`tasks/engines/cores.py`), in turns, round after round: greedy tokens/s of one sequence (the prompt
is cached, so this is generation only), first alone, then beside `yes > /dev/null`. Before each
measured call the engine decodes a few tokens, so every setting meets the same state of the machine
(the default notices a new process within a second). Reported: the median over rounds, the range
(min-max) and the share of its own idle speed each setting keeps beside the busy process. The load
average at start and end says how busy the rest of the machine was.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from formwork.tasks.engines.base import Sampling
from formwork.tasks.engines.cores import usable_cores
from formwork.tasks.engines.local import LocalEngine

STORY = [{"role": "user", "content": "Write a long story about a lighthouse keeper and a storm."}]
SETTINGS: dict[str, int | None] = {"1 thread": 1, "2 threads": 2, "default (free cores)": None}


def speed(engine: LocalEngine, tokens: int) -> tuple[float, tuple[int, int]]:
    """(tokens/s of one greedy call of `tokens` tokens, the threads llama.cpp used at its end)."""
    engine.complete(STORY, Sampling(8))  # the prompt cached; the default has seen the machine as it is
    done = engine.complete(STORY, Sampling(tokens))
    return done.completion_tokens / done.duration_s, engine.threads


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    engines = {name: LocalEngine(n_threads=threads, slots=1) for name, threads in SETTINGS.items()}
    alone: dict[str, list[float]] = {name: [] for name in engines}
    busy: dict[str, list[float]] = {name: [] for name in engines}
    used: dict[str, set[int]] = {name: set() for name in engines}
    load_start = os.getloadavg()
    for _ in range(args.rounds):
        for name, engine in engines.items():
            rate, _threads = speed(engine, args.tokens)
            alone[name].append(rate)
            spinner = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
            try:
                time.sleep(1.0)
                rate, threads = speed(engine, args.tokens)
                busy[name].append(rate)
                used[name].add(threads[0])
                line = f"{name}: alone {alone[name][-1]:.1f}, beside {rate:.1f} tok/s"
                print(line, file=sys.stderr, flush=True)
            finally:
                spinner.kill()
                spinner.wait()
            time.sleep(1.0)  # the spinner's core free again before the next setting's idle call
    load_end = os.getloadavg()
    print(f"{usable_cores()} usable cores; {args.rounds} rounds of {args.tokens} tokens; load average "
          f"{load_start[0]:.2f} at start, {load_end[0]:.2f} at end\n")  # fmt: skip
    print("| threads | alone tok/s (min-max) | beside one busy core tok/s (min-max) | kept "
          "| threads used beside it |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | --- |")
    for name in engines:
        idle, loaded = statistics.median(alone[name]), statistics.median(busy[name])
        print(f"| {name} | {idle:.1f} ({min(alone[name]):.1f}-{max(alone[name]):.1f}) | {loaded:.1f} "
              f"({min(busy[name]):.1f}-{max(busy[name]):.1f}) | {loaded / idle:.0%} | "
              f"{', '.join(map(str, sorted(used[name])))} |")  # fmt: skip
    for engine in engines.values():
        engine.close()


if __name__ == "__main__":
    main()
