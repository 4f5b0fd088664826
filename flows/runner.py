"""Driving a run's chunks and closing the run: finished, stopped (SIGTERM) or crashed, then summarised.

The run is opened by flows.run_start and guarded by flows.run_guards (heartbeat, SIGTERM). A run that
stops on an exception is marked `crashed`; stored results stay, and the next run (or the reprocessing
flow) picks up where it stopped. Records another run holds are waited for under `--wait`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from itertools import islice
from typing import TypeVar

from formwork.db.claims import Holders, holders, release_run
from formwork.db.keeping import DatabaseUnavailable
from formwork.db.models import utcnow
from formwork.db.queries import RunSummary, run_summary
from formwork.db.queue import release_worker
from formwork.db.store import finish_run
from formwork.flows.artifacts import publish_run
from formwork.flows.chunk import RunContext, process_chunk
from formwork.flows.run_guards import RunStopped, beating, stopped_by_sigterm

logger = logging.getLogger(__name__)


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
