"""What both flows share: check the schema and engines, open a run, drive the chunks, close the run.

The checks come first so a broken schema or a dead server refuses the run before a row is written.
While chunks run, a heartbeat thread refreshes the run and its claims; a run that stops on an
exception is marked `crashed`, and one killed outright (no `finally` runs) is marked `crashed` by the
next run once its heartbeat is older than the run lease (`run_lease_s`), which also frees the records
it held. Stored results stay, and the next run
(or the reprocessing flow) picks up where it stopped.

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
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from itertools import islice
from typing import TypeVar

from prefect import get_run_logger
from sqlalchemy.orm import Session

from formwork.db.claims import Holders, heartbeat, holders, mark_crashed, release_run
from formwork.db.journal import Journal, replay
from formwork.db.keeping import DatabaseUnavailable, OutageWindow, is_outage, reason
from formwork.db.models import utcnow
from formwork.db.queries import RunSummary, run_summary
from formwork.db.queue import release_worker
from formwork.db.store import QueuePolicy, finish_run, start_run
from formwork.flows.artifacts import publish_run
from formwork.flows.chunk import RunContext, process_chunk
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


T = TypeVar("T")
CHUNKS_AHEAD = 2  # at least this many chunks wait in the shared pool while the oldest one drains
WAIT_POLL_S = 2.0  # how often `--wait` looks again whether the records it waits for are free


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of `size` items (the last may be shorter), read lazily (itertools.batched is 3.12+)."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def run_chunks(context: RunContext, chunks: Iterable[list[int]], replayed: int = 0) -> RunSummary:
    """Process the chunks with no barrier between them, close the run (finished or crashed), summarise.

    Every chunk's records go to one pool shared by the run, sized to what the engines allow in flight,
    and the next chunks are submitted before the oldest one drains: the engines never wait for a
    chunk's slowest record (a GPU server sat mostly idle behind that barrier). Each chunk still claims
    its records first; each record is stored as it finishes (flows.chunk, db.writer). `chunks` may be
    a generator that stores the input as it goes, so the first model call does not wait for the whole
    input. Records another run holds are waited for (`context.wait`), or counted in the summary, as are
    the `replayed` records journalled by earlier runs (`replay_journals`). Told to stop (SIGTERM), it
    starts nothing more, closes the run `stopped` once the records in hand are stored, and raises
    `RunStopped`.
    """
    state = "crashed"
    in_flight = min(context.reasoner.max_concurrency, context.formatter.max_concurrency)
    held: list[list[int]] = []
    try:
        with (
            beating(context),
            stopped_by_sigterm(context),
            ThreadPoolExecutor(in_flight, thread_name_prefix="formwork-record") as pool,
        ):
            shared = replace(context, pool=pool)
            waiting: deque = deque()
            try:
                ahead = CHUNKS_AHEAD
                for record_ids in chunks:
                    if context.stopping.is_set():
                        break  # no more input is read, and no chunk claims its records
                    # twice the pool's worth of records queued, so it stays full while the oldest chunk
                    # drains and the next waits for its claims (one pool's worth left it half idle)
                    ahead = max(ahead, -(-2 * in_flight // len(record_ids)) + 1)
                    waiting.append(process_chunk.submit(shared, record_ids))
                    while len(waiting) > ahead:
                        held.append(waiting.popleft().result().held)
                while waiting:
                    held.append(waiting.popleft().result().held)
            finally:  # a chunk still storing (or journalling) what finished ends before the run does
                for future in waiting:
                    future.wait()
            held = [ids for ids in held if ids]
            while held and context.wait and not context.stopping.is_set():
                held = _when_free(shared, held)
        state = "stopped" if context.stopping.is_set() else "finished"
    finally:
        context.journal.close()
        _close(context, state)
    summary = context.database.call(lambda: _summary(context, held), "summarise the run")
    summary.replayed = replayed
    publish_run(context.sessions, summary, context.review_dir)
    if state == "stopped":
        raise RunStopped(summary)
    return summary


def _close(context: RunContext, state: str) -> None:
    """Record how the run ended; a database gone for good ends it with what became of its records."""

    def finish() -> None:
        with context.sessions() as session:
            if state == "stopped":  # the records (and retry-queue entries) it had not begun go back
                release_run(session, context.run_id)
                if context.worker is not None:
                    release_worker(session, context.worker, utcnow())
            finish_run(session, context.run_id, state)

    try:
        context.database.call(finish, "close the run")
    except DatabaseUnavailable as exc:
        raise DatabaseUnavailable(f"{exc}. Run {context.run_id} stopped: {context.journal.account()}. Run "
                                  "again once the database is back") from None  # fmt: skip


def _summary(context: RunContext, held: list[list[int]]) -> RunSummary:
    with context.sessions() as session:
        summary = run_summary(session, context.run_id)
        left = [i for ids in held for i in ids]
        summary.held = holders(session, context.run_id, context.schema, left, context.lease)
        session.commit()
    return summary


def _when_free(context: RunContext, held: list[list[int]]) -> list[list[int]]:
    """Wait until the other runs' claims on `held` lapse (a run killed moments ago holds its records
    for the run lease), or those runs finish the records, then process what is left; return what
    another run holds still (a live run refreshes its claims)."""

    def look() -> Holders:
        with context.sessions() as session:
            return holders(session, context.run_id, context.schema, [i for ids in held for i in ids],
                           context.lease)  # fmt: skip

    found = context.database.call(look, "see who holds the records left")
    if found.records == 0:
        return []
    if found.until is not None and (pause := (found.until - utcnow()).total_seconds() + 0.5) > 0:
        logger.warning("run %s: waiting %.0f s, until %s UTC, for %d records that run %s holds",
                       context.run_id, pause, f"{found.until:%H:%M:%S}", found.records,
                       ", ".join(map(str, found.runs)))  # fmt: skip
        # Looked at again every few seconds, not slept through: a holder that finishes or is closed
        # lets go of its claims long before their lease ends, and SIGTERM ends the wait at once.
        while pause > 0 and not context.stopping.wait(min(pause, WAIT_POLL_S)):
            found = context.database.call(look, "see who holds the records left")
            if found.records == 0:
                return []
            if found.until is None:
                break
            pause = (found.until - utcnow()).total_seconds() + 0.5
        if context.stopping.is_set():
            return held
    again = [process_chunk.submit(context, ids) for ids in held]
    return [ids for ids in (future.result().held for future in again) if ids]
