"""What both flows share: check the schema and engines, open a run, drive the chunks, close the run.

The checks come first so a broken schema or a dead server refuses the run before a row is written.
While chunks run, a heartbeat thread refreshes the run and its claims; a run that stops on an
exception is marked `crashed`, and one killed outright (no `finally` runs) is marked `crashed` by the
next run once its heartbeat is older than the claim timeout. Stored results stay, and the next run
(or the reprocessing flow) picks up where it stopped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta

from prefect import get_run_logger
from sqlalchemy.orm import Session

from db.claims import heartbeat, mark_crashed
from db.queries import RunSummary, run_summary
from db.store import QueuePolicy, finish_run, start_run
from schemas.registry import Schema
from tasks.chunk import RunContext, process_chunk
from tasks.engines import check_engines, engines_for
from tasks.engines.base import Engine
from tasks.extract import ExtractOptions
from tasks.settings import Settings

logger = logging.getLogger(__name__)


@contextmanager
def checked_engines(settings: Settings) -> Iterator[tuple[Engine, Engine]]:
    """Open the engines and run their start-up checks (a server that ignores schemas is refused)."""
    with engines_for(settings) as (reasoner, formatter):
        for found in check_engines(reasoner, formatter):
            get_run_logger().info("engine ready: %s", found)
        yield reasoner, formatter


def new_context(
    sessions: Callable[[], Session],
    settings: Settings,
    schema: Schema,
    engines: tuple[Engine, Engine],
    *,
    flow: str,
    source: str,
    worker: str | None = None,
) -> RunContext:
    """Mark dead runs crashed, write this run's row and bundle what every chunk of this run needs."""
    reasoner, formatter = engines
    timeout = timedelta(seconds=settings.claim_timeout_s)
    with sessions() as session:
        crashed = mark_crashed(session, timeout)
        run_id = start_run(
            session,
            schema,
            flow=flow,
            source=source,
            engine=settings.engine,
            reasoning_model=reasoner.model,
            formatting_model=formatter.model,
        )
    if crashed:
        get_run_logger().warning("%d earlier runs stopped without finishing: marked crashed", crashed)
    options = ExtractOptions(
        reasoning_max_tokens=settings.reasoning_max_tokens,
        reasoning_temperature=settings.reasoning_temperature,
        reasoning_repetition_penalty=settings.reasoning_repetition_penalty,
        format_max_tokens=settings.format_max_tokens,
        max_attempts=settings.max_attempts,
        min_confidence=settings.min_confidence,
    )
    queue = QueuePolicy(include_partial=settings.queue_partial, max_attempts=settings.queue_max_attempts)
    return RunContext(
        run_id,
        schema,
        reasoner,
        formatter,
        options,
        sessions,
        queue,
        timeout,
        worker,
        redo=worker is not None,
    )


@contextmanager
def beating(context: RunContext) -> Iterator[None]:
    """Refresh the run's heartbeat and claims every quarter of the claim timeout until the block ends."""
    stop = threading.Event()
    interval = max(0.5, min(60.0, context.claim_timeout.total_seconds() / 4))

    def beat() -> None:
        while not stop.wait(interval):
            try:
                with context.sessions() as session:
                    heartbeat(session, context.run_id, context.worker)
            except Exception:  # a missed beat is harmless; the next one may succeed
                logger.warning("run %s: heartbeat failed", context.run_id, exc_info=True)

    thread = threading.Thread(target=beat, name=f"formwork-heartbeat-{context.run_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def run_chunks(context: RunContext, record_ids: Sequence[int], chunk_size: int) -> RunSummary:
    """Process the records chunk by chunk, close the run (finished or crashed), return its summary."""
    state = "crashed"
    try:
        with beating(context):
            for start in range(0, len(record_ids), chunk_size):
                process_chunk(context, list(record_ids[start : start + chunk_size]))
        state = "finished"
    finally:
        with context.sessions() as session:
            finish_run(session, context.run_id, state)
    with context.sessions() as session:
        return run_summary(session, context.run_id)
