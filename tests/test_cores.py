"""The embedded engine's thread count follows the cores other processes leave free (issue 28, deliver 2).

The speed itself is a benchmark (benchmarks/busy_core.py, BENCHMARKS section 19); pinned here is the
rule, and that the measurement sees a process spinning beside it.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from formwork.tasks.engines.cores import ThreadBudget, free_cores, usable_cores


@pytest.mark.parametrize(
    ("busy", "cores", "threads"),
    [(0.0, 2, 2), (0.2, 2, 2), (0.5, 2, 1), (1.0, 2, 1), (2.0, 2, 1), (0.9, 8, 7), (7.9, 8, 1), (0.0, 1, 1)],
)
def test_a_core_is_free_when_others_take_less_than_a_quarter_of_it(busy, cores, threads) -> None:
    assert free_cores(busy, cores) == threads


@pytest.mark.skipif(usable_cores() < 2, reason="one core: there is never more than one thread to give up")
def test_a_process_spinning_on_every_core_leaves_one_thread() -> None:
    spin = "import time\nend = time.monotonic() + 3\nwhile time.monotonic() < end: pass\n"
    spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(usable_cores())]
    try:
        budget = ThreadBudget(window_s=0.5)
        time.sleep(0.6)
        assert budget.now() == 1
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
