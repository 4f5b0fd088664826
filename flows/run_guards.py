"""What guards a run while its chunks run: a heartbeat, and a clean stop on SIGTERM.

A heartbeat thread refreshes the run and its claims, so no other run takes its records; one killed
outright (no `finally` runs) stops beating and is marked `crashed` by the next run (flows.run_start).

SIGTERM (systemd's or Docker's stop) stops a run cleanly: Prefect's own handler raised in the main
thread, which then waited for every chunk in flight while their records went on starting (up to 400),
and closed the run as `crashed` although all was stored (issue 54). Now the signal only tells the run
to stop: no chunk or record starts after it, the records in hand finish and are stored, the claims on
the rest are released, the run is closed `stopped`, and `RunStopped` says so (the CLI exits 143). The
next run takes up the records left.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from formwork.db.claims import heartbeat
from formwork.db.keeping import is_outage, reason
from formwork.db.queries import RunSummary
from formwork.flows.chunk import RunContext

logger = logging.getLogger(__name__)


@contextmanager
def beating(context: RunContext) -> Iterator[None]:
    """Refresh the run's heartbeat and claims every quarter of the run lease until the block ends."""
    stop = threading.Event()
    interval = max(0.5, min(60.0, context.lease.total_seconds() / 4))

    def beat() -> None:
        missed = 0
        while not stop.wait(interval):
            try:
                with context.sessions() as session:
                    heartbeat(session, context.run_id, context.worker)
                missed = 0
            except Exception as exc:  # a missed beat is harmless; the next one may succeed
                missed += 1
                if not is_outage(exc):
                    logger.warning("run %s: heartbeat failed", context.run_id, exc_info=True)
                elif missed == 1:  # an outage: said once (the writes say how long they wait for it)
                    logger.warning("run %s: heartbeat failed: %s", context.run_id, reason(exc))

    thread = threading.Thread(target=beat, name=f"formwork-heartbeat-{context.run_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class RunStopped(RuntimeError):
    """The run was told to stop (SIGTERM) and did: closed `stopped`, with what it stored."""

    def __init__(self, summary: RunSummary) -> None:
        self.summary = summary
        super().__init__(
            f"stopped by SIGTERM: run {summary.run_id} stored {summary.records} records and is marked "
            "stopped; the records it had not begun are released: run the same command again to take them up"
        )


@contextmanager
def stopped_by_sigterm(context: RunContext) -> Iterator[None]:
    """While the block runs, SIGTERM sets `context.stopping` instead of raising in the main thread (so no
    record starts after it, and the records in hand finish); the earlier handler is restored after.
    Signals reach only the main thread: a run driven from another thread keeps the handler it has."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        if not context.stopping.is_set():
            logger.warning("run %s: SIGTERM: no record starts any more; those in hand finish and are stored",
                           context.run_id)  # fmt: skip
        context.stopping.set()

    earlier = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, earlier)
