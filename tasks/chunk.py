"""The Prefect task: one chunk of records through both passes, stored in one transaction.

One task per chunk, never per record: Prefect's ephemeral server records only ~12–21 task runs a
second here and stalls past that, so record outcomes live in Formwork's tables, not in Prefect states.
Inside a chunk, records run concurrently up to what the engines allow (1 for the embedded model, the
configured number of requests in flight for a server).

Prefect retries a chunk only for errors a retry can fix (a retryable engine error, a lost database
connection); a retried chunk skips the records it already stored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from sqlalchemy import select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from db.models import Record
from db.store import QueuePolicy, records_without_result, save_outcomes
from schemas.registry import Schema
from tasks.engines.base import Engine, EngineError
from tasks.extract import ExtractOptions, Outcome, extract_record
from tasks.progress import record_done
from tasks.validate import Verdict

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
    redo: bool = False  # reprocessing: process records even if they already have a result


def retry_can_help(_task: Any, _task_run: Any, state: Any) -> bool:
    """Prefect's retry_condition_fn: retry only errors whose retry can succeed."""
    try:
        state.result()
    except EngineError as exc:
        return exc.retryable
    except OperationalError:
        return True
    except Exception:
        return False
    return False


def _input_problem(record_id: int, problem: str) -> Outcome:
    return Outcome(record_id, Verdict("failed", None, [f"bad input: {problem}"]), attempts=0, queueable=False)


@task(name="process_chunk", retries=2, retry_delay_seconds=[2, 10], retry_condition_fn=retry_can_help,
      cache_policy=NO_CACHE)  # fmt: skip
def process_chunk(context: RunContext, record_ids: list[int]) -> list[str]:
    """Process the records of one chunk that have no result yet; return their statuses."""
    with context.sessions() as session:
        pending = record_ids if context.redo else records_without_result(session, record_ids, context.schema)
        rows = session.execute(
            select(Record.id, Record.text, Record.problem).where(Record.id.in_(pending))
        ).all()

    def one(row: Any) -> Outcome:
        try:
            if row.problem:
                outcome = _input_problem(row.id, row.problem)
            else:
                outcome = extract_record(
                    row.id, row.text, context.schema, context.reasoner, context.formatter, context.options
                )
        except Exception as exc:  # an unmapped fault fails this record, never the night's batch
            logger.exception("record %s: unexpected error", row.id)
            outcome = Outcome(row.id, Verdict("failed", None, [f"internal error: {exc!r}"]), attempts=0)
        record_done(outcome.verdict.status)
        return outcome

    workers = min(context.reasoner.max_concurrency, context.formatter.max_concurrency)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="formwork-record") as pool:
        outcomes = list(pool.map(one, rows))
    with context.sessions() as session:
        save_outcomes(session, context.run_id, context.schema, outcomes, context.queue)
    return [o.verdict.status for o in outcomes]
