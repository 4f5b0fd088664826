"""The Prefect task: one chunk of records through both passes, each record stored as soon as it is done.

One task per chunk, never per record: Prefect's ephemeral server records only ~12–21 task runs a
second here and stalls past that, so record outcomes live in Formwork's tables, not in Prefect states.
Records run concurrently up to what the engines allow (the embedded engine's slots, or the configured
number of requests in flight for a server), in a pool the run's chunks share (flows.runner), so no
chunk waits for another to drain.

Each finished record goes to the chunk's `RecordWriter` (db.writer), which stores it with its calls
within about a second, in a group with whatever else finished meanwhile: a run killed in the middle of
a chunk loses at most the last second of finished work, and the next run takes up only the rest.
Each answered model call is stored that way too, before its record ends (db.writer's `EarlyCalls`:
a long list read item by item makes a call per unit, over minutes), and the next run that reads the
record takes those answers instead of paying for them again.

Prefect retries nothing here, so no retry can repeat a paid call: an engine error fails its record
(retryable ones wait in the retry queue), and a database that goes away is waited for within the
run's outage window, for the claim as for every write (db.keeping). Past the window the run stops:
no record starts any more, and what finishes goes to the run's journal (db.journal), which the next
run stores before it calls any model.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from sqlalchemy import select
from sqlalchemy.orm import Session

from formwork.db.claims import Claimed, claim_pending
from formwork.db.journal import Journal
from formwork.db.keeping import DatabaseUnavailable, OutageWindow, save_chunk
from formwork.db.models import Record
from formwork.db.queries import earlier_rows
from formwork.db.queue_claims import unclaim
from formwork.db.store import QueuePolicy
from formwork.db.writer import EarlyCalls, RecordWriter
from formwork.flows.progress import record_done
from formwork.schemas.registry import Schema
from formwork.tasks.calls import ANSWERS, ExtractOptions, Outcome
from formwork.tasks.engines.base import Engine
from formwork.tasks.escalation import combine
from formwork.tasks.extract import extract_safely, input_problem

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunContext:
    """What every chunk of one run shares."""

    run_id: int
    schema: Schema
    reasoner: Engine
    formatter: Engine
    options: ExtractOptions
    sessions: Callable[[], Session]
    queue: QueuePolicy
    database: OutageWindow  # how long every claim and write waits for a database that went away
    journal: Journal  # where finished records go when the database stays away longer
    lease: timedelta = timedelta(minutes=1)  # a run silent this long is dead (its claims stale)
    worker: str | None = None  # reprocessing: the retry-queue claims' holder
    redo: bool = False  # reprocessing: process records even if they already have a result
    pool: Executor | None = None  # the run's record pool, shared by its chunks (flows.runner)
    review_dir: Path | None = None  # where each run writes its review page (linked from Prefect)
    wait: bool = False  # records another run holds: wait for its lease to lapse, then process them
    escalating: bool = False  # reading rows another reader left unsure: their certified values join
    # the policy is a calibration measured on the records the first reader escalates (db.escalated_
    # calibrations), so the stronger reader's values may be certified in them (tasks.escalation)
    measured_on_escalated: bool = False
    # set when the run is told to stop (SIGTERM, flows.runner): no record starts after it
    stopping: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class ChunkDone:
    """What a chunk did: its records' statuses, and the records another run held (not processed)."""

    statuses: list[str]
    held: list[int]


def _claimed_rows(context: RunContext, record_ids: list[int], early: EarlyCalls
                  ) -> tuple[list[Any], list[int], dict[int, dict[str, Any]]]:  # fmt: skip
    """Claim the chunk's records (overlapping runs split the work) and read those still pending, with
    the answers killed runs stored for them (`early`); also return the records another run holds and,
    when escalating, each record's stored row."""
    schema = context.schema

    def claim() -> tuple[Claimed, list[Any], dict[int, dict[str, Any]]]:
        with context.sessions() as session:
            claimed = claim_pending(session, context.run_id, schema, record_ids, context.lease, context.redo)
            if context.worker is not None and claimed.held:
                unclaim(session, context.worker, claimed.held, schema.name, schema.version)
            rows = session.execute(
                select(Record.id, Record.text, Record.meta, Record.problem).where(Record.id.in_(claimed.todo))
            ).all()
            earlier = (
                earlier_rows(session, claimed.todo, schema.name, schema.version) if context.escalating else {}
            )
            early.load(session, claimed.todo)
            session.commit()
        return claimed, rows, earlier

    claimed, rows, earlier = context.database.call(claim, "claim a chunk's records")
    if claimed.held:
        logger.info("run %s: %d records are in flight in another run", context.run_id, len(claimed.held))
    return rows, claimed.held, earlier


@task(name="process_chunk", cache_policy=NO_CACHE)
def process_chunk(context: RunContext, record_ids: list[int]) -> ChunkDone:
    """Process the records of one chunk that have no result yet, storing each as it finishes; return
    their statuses and the records another run holds; a chunk begun after the run was told to stop
    claims nothing and does nothing."""
    if context.stopping.is_set():
        return ChunkDone([], [])
    early = EarlyCalls(context.sessions, context.run_id, context.database)
    try:
        return _process(context, record_ids, early)
    finally:
        early.close()


def _process(context: RunContext, record_ids: list[int], early: EarlyCalls) -> ChunkDone:
    rows, held, earlier = _claimed_rows(context, record_ids, early)

    def save(outcomes: Sequence[Outcome]) -> None:
        left, settled = early.taken(outcomes)  # calls stored as they were answered are not stored again
        try:
            save_chunk(context.sessions, context.run_id, context.schema, left, context.queue,
                       context.database)  # fmt: skip
        except DatabaseUnavailable:
            context.journal.write(left)
            return
        early.settle(settled)

    with RecordWriter(save, name=f"formwork-writer-{context.run_id}") as writer:

        def one(row: Any) -> Outcome | None:
            if context.database.closed or context.stopping.is_set():
                return None  # the run stops: no new paid call (nor one whose result could not be stored)
            if row.problem:
                outcome = input_problem(row.id, row.problem)
            else:
                engines = (context.reasoner, context.formatter)
                answers = ANSWERS.set(early)  # each answered call stored at once, or taken from a killed run
                try:
                    outcome = extract_safely(row.id, row.text, context.schema, engines, context.options,
                                             row.meta)  # fmt: skip
                finally:
                    ANSWERS.reset(answers)
                if (
                    row.id in earlier and outcome.verdict.status != "failed"
                ):  # the stronger reader's values join
                    first = earlier[row.id]
                    outcome.verdict = combine(
                        context.schema,
                        first,
                        first["model"],
                        outcome.verdict,
                        context.formatter.model,
                        measured_on_escalated=context.measured_on_escalated,
                    )
            writer.put(outcome)
            record_done(outcome.verdict.status)
            return outcome

        if context.pool is not None:
            outcomes = list(context.pool.map(one, rows))
        else:
            workers = min(context.reasoner.max_concurrency, context.formatter.max_concurrency)
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="formwork-record") as pool:
                outcomes = list(pool.map(one, rows))
    return ChunkDone([o.verdict.status for o in outcomes if o is not None], held)
