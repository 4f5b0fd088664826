"""Opening a run: check the schema and engines, then write the run's row and what its chunks share.

The checks come first so a broken schema or a dead server refuses the run before a row is written.
Opening a run also marks crashed the runs that died without closing (their heartbeat older than the
run lease, `run_lease_s`), which frees the records they held; and stores the finished records that
runs which lost their database journalled, before any model is called. The chunks are then driven by
flows.runner.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from prefect import get_run_logger
from sqlalchemy.orm import Session

from formwork.db.claims import mark_crashed
from formwork.db.journal import Journal, replay
from formwork.db.keeping import OutageWindow
from formwork.db.store import QueuePolicy, start_run
from formwork.flows.chunk import RunContext
from formwork.flows.prefect_env import quiet_and_redacted
from formwork.flows.run_policy import run_policy
from formwork.schemas.registry import Schema
from formwork.tasks.engines import check_engines, engine_kind, engines_for
from formwork.tasks.engines.base import Engine
from formwork.tasks.engines.models import BUNDLED
from formwork.tasks.presets import run_warning
from formwork.tasks.settings import Settings

logger = logging.getLogger(__name__)
quiet_and_redacted()  # deployments import the flows without the CLI


def reader_setup(settings: Settings, formatter: Engine) -> str:
    """The reader as NAME@MODE: the model as `formwork models` and `--model` name it (a catalogue model,
    the bundled one when none is set; a GGUF file by its name, a served model by the server's name) and
    the mode. A run's results are keyed by it (db.store), so another model or mode reads its records
    again instead of finding them done."""
    name = formatter.model
    if settings.engine == "local":
        name = settings.local_model or (formatter.model if settings.local_model_path else BUNDLED.name)
    return f"{name}@{settings.mode}"


@contextmanager
def checked_engines(settings: Settings, schema: Schema | None = None) -> Iterator[tuple[Engine, Engine]]:
    """Open the engines and run their start-up checks (a server that ignores schemas is refused, and one
    without logprobs when `schema` or the settings hold a value to a confidence bound)."""
    with engines_for(settings, schema.checked_body if schema else None) as (reasoner, formatter):
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
    redo: bool = False,
    measuring: bool = False,
    wait: bool = False,
    escalating: bool = False,
) -> RunContext:
    """Mark dead runs crashed, write this run's row and bundle what every chunk of this run needs.
    `measuring`: a calibration's run (`formwork eval --calibrate`): nothing certified, nothing dropped.
    `escalating`: the stronger reader of rows another left unsure (their values join, tasks.escalation)."""
    reasoner, formatter = engines
    timeout = timedelta(seconds=settings.run_lease_s)
    kind = engine_kind(settings, formatter)  # openai:<dialect>: never an embedded or vLLM calibration
    with sessions() as session:
        crashed = mark_crashed(session, timeout)
        decided = run_policy(session, settings, schema, engines, measuring=measuring, escalating=escalating)
        options, applied, reach = decided.options, decided.applied, decided.reach
        run_id = start_run(
            session,
            schema,
            flow=flow,
            source=source,
            engine=kind,
            reasoning_model=reasoner.model,
            formatting_model=formatter.model,
            confidence=applied,
            worker=worker,
            setup=reader_setup(settings, formatter),
        )
    if crashed:
        get_run_logger().warning("%d earlier runs stopped without finishing: marked crashed", crashed)
    if applied is not None:
        logger.info("run %s confidence: %s", run_id, applied["guarantee"])
    if reach == ():
        get_run_logger().warning("run %s: no row escalates: %s certifies none of %s's fields (calibrate "
                                 "it on gold: formwork eval --calibrate)", run_id, settings.escalate_to,
                                 schema.name)  # fmt: skip
    warning = run_warning(settings.preset, settings.allow_chat_in_constrained)
    if warning:
        get_run_logger().warning("run %s: %s", run_id, warning)
    queue = QueuePolicy(include_partial=settings.queue_partial, max_attempts=settings.queue_max_attempts,
                        escalate_to=settings.escalate_to, escalating=escalating,
                        escalate_fields=reach)  # fmt: skip
    return RunContext(
        run_id,
        schema,
        reasoner,
        formatter,
        options,
        sessions,
        queue,
        database=OutageWindow(settings.db_outage_s),
        journal=Journal(settings.journal_folder(), settings.db_url, run_id, schema, queue),
        lease=timeout,
        worker=worker,
        redo=redo or worker is not None,
        review_dir=settings.review_dir,
        wait=wait,
        escalating=escalating,
    )


def replay_journals(sessions: Callable[[], Session], settings: Settings) -> int:
    """Store the finished records that runs which lost their database journalled (db.journal), before
    this run calls any model: each one then has its result, and is not paid for again. Return how many."""
    folder, window = settings.journal_folder(), OutageWindow(settings.db_outage_s)
    replayed = replay(sessions, folder, settings.db_url, window)
    if replayed.records:
        get_run_logger().warning("stored %d finished records that run %s journalled while the database was "
                                 "away", replayed.records, ", ".join(map(str, replayed.runs)))  # fmt: skip
    return replayed.records
