"""What both flows share: check the schema and engines, open a run, drive the chunks, close the run.

The checks come first so a broken schema or a dead server refuses the run before a row is written.
A run that stops on an exception is marked `crashed`; its stored results stay, and the next run (or
the reprocessing flow) picks up where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from prefect import get_run_logger
from sqlalchemy.orm import Session

from db.queries import RunSummary, run_summary
from db.store import QueuePolicy, finish_run, start_run
from schemas.registry import Schema
from tasks.chunk import RunContext, process_chunk
from tasks.engines import check_engines, engines_for
from tasks.engines.base import Engine
from tasks.extract import ExtractOptions
from tasks.presets import run_warning
from tasks.settings import Settings


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
    redo: bool = False,
) -> RunContext:
    """Write the run row and bundle what every chunk of this run needs."""
    reasoner, formatter = engines
    with sessions() as session:
        run_id = start_run(
            session,
            flow=flow,
            source=source,
            schema_name=schema.name,
            schema_version=schema.version,
            engine=settings.engine,
            reasoning_model=reasoner.model,
            formatting_model=formatter.model,
        )
    options = ExtractOptions(
        reasoning_max_tokens=settings.reasoning_max_tokens,
        reasoning_temperature=settings.reasoning_temperature,
        reasoning_repetition_penalty=settings.reasoning_repetition_penalty,
        format_max_tokens=settings.format_max_tokens,
        max_attempts=settings.max_attempts,
        mode=settings.mode,
        preset=settings.preset,
        allow_chat_in_constrained=settings.allow_chat_in_constrained,
    )
    warning = run_warning(settings.preset, settings.allow_chat_in_constrained)
    if warning:
        get_run_logger().warning("run %s: %s", run_id, warning)
    queue = QueuePolicy(include_partial=settings.queue_partial, max_attempts=settings.queue_max_attempts)
    return RunContext(run_id, schema, reasoner, formatter, options, sessions, queue, redo)


def run_chunks(context: RunContext, record_ids: Sequence[int], chunk_size: int) -> RunSummary:
    """Process the records chunk by chunk, close the run (finished or crashed), return its summary."""
    state = "crashed"
    try:
        for start in range(0, len(record_ids), chunk_size):
            process_chunk(context, list(record_ids[start : start + chunk_size]))
        state = "finished"
    finally:
        with context.sessions() as session:
            finish_run(session, context.run_id, state)
    with context.sessions() as session:
        return run_summary(session, context.run_id)
