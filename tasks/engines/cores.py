"""How many llama.cpp threads the embedded engine should use now: one per core that others leave free.

llama.cpp's worker threads meet at a spinning barrier after every operation of a forward pass, so a
thread that loses its core to another process stalls all the others (issue 28: SmolLM2 fell from 45
to 13 tok/s with 2 threads beside one `yes`, and kept 27 with 1 thread). The binding exposes no
polling or barrier setting that avoids it, so the number of threads follows the cores other
processes leave free, measured over the last `window_s`:

    others = (CPU time all processes spent on our cores - the CPU time this process spent) / wall time

from `/proc/stat` (one line per core, restricted to `os.sched_getaffinity`) and `time.process_time`.
A core counts as free when others use less than a quarter of it. This process's own spinning is
its own time, so a crowded machine shows up as others' time taken away, and the count shrinks until
their share is whole again. Before the first window the one-minute load average gives the guess.
Off Linux (no `/proc/stat`) the count stays at the cores this process may use.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

WINDOW_S = 1.0
SLACK = 0.25  # a core whose other users take less than this fraction of it still counts as free
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
_STAT = Path("/proc/stat")


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask), not the machine's count."""
    return len(os.sched_getaffinity(0))


def _busy_seconds(cores: set[int]) -> float | None:
    """CPU seconds every process spent on `cores` since boot (all but idle and I/O wait), or None."""
    try:
        lines = _STAT.read_text().splitlines()
    except OSError:
        return None
    ticks = 0
    for line in lines:
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cores:
            values = [int(v) for v in fields[:8]]
            ticks += sum(values) - values[3] - values[4]  # idle and iowait are the 4th and 5th
    return ticks * _TICK_S


def free_cores(busy_by_others: float, cores: int) -> int:
    """Threads for `cores` cores of which others keep `busy_by_others` busy: at least 1."""
    return max(1, min(cores, int(cores - busy_by_others + SLACK)))


class ThreadBudget:
    """The thread count to use now, re-measured at most once per `window_s`."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self._cores = set(os.sched_getaffinity(0))
        self._window_s = window_s
        self._mark = self._sample()
        self.threads = free_cores(os.getloadavg()[0], len(self._cores))

    def _sample(self) -> tuple[float, float, float | None]:
        return time.monotonic(), time.process_time(), _busy_seconds(self._cores)

    def now(self) -> int:
        """The thread count for the next step: the last one, or a new one once a window has passed."""
        wall, own, busy = sample = self._sample()
        then_wall, then_own, then_busy = self._mark
        if busy is None or then_busy is None or wall - then_wall < self._window_s:
            return self.threads
        others = max(0.0, (busy - then_busy) - (own - then_own)) / (wall - then_wall)
        self._mark = sample
        self.threads = free_cores(others, len(self._cores))
        return self.threads
