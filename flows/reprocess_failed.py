"""Flow `reprocess_failed`: drain the retry queue, each due entry claimed by exactly one worker.

Claims are atomic (PostgreSQL `FOR UPDATE SKIP LOCKED`; SQLite one `UPDATE ... RETURNING` inside
`BEGIN IMMEDIATE`), committed before any model is called, and put back if a worker dies holding them
(after `claim_timeout_s`). Reprocessing may use other settings than the nightly run, such as a bigger
model or budget: pass them as `overrides` (`formwork retry --set reasoning_max_tokens=1024`).
"""

from __future__ import annotations

import os
import socket
from collections import defaultdict
from datetime import timedelta
from typing import Any

from prefect import flow, get_run_logger

from db.queries import RunSummary
from db.queue import Claim, claim_due, record_failure, release_stale
from db.session import session_factory
from flows.runner import checked_engines, new_context, run_chunks
from schemas.registry import Schema, SchemaProblem, load_checked_schema
from tasks.settings import Settings


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@flow(name="reprocess_failed", validate_parameters=True)
def reprocess_failed(
    db_url: str | None = None,
    limit: int = 100,
    overrides: dict[str, Any] | None = None,
    worker: str | None = None,
) -> list[RunSummary]:
    """Claim up to `limit` due queue entries and run them through both passes again."""
    settings = Settings(**(overrides or {}))
    sessions = session_factory(db_url or settings.db_url)
    logger = get_run_logger()
    with sessions() as session:
        released = release_stale(session, timedelta(seconds=settings.claim_timeout_s))
        claims = claim_due(session, worker or worker_name(), limit)
    logger.info("claimed %d entries (%d stale claims put back)", len(claims), released)
    if not claims:
        return []
    summaries = []
    with checked_engines(settings) as engines:
        by_schema: dict[str, list[Claim]] = defaultdict(list)
        for claim in claims:
            by_schema[claim.schema_source].append(claim)
        for source, group in by_schema.items():
            try:
                schema = load_checked_schema(source)
            except SchemaProblem as exc:  # the schema file moved or broke: say so on each entry
                _fail_claims(sessions, group, f"schema unusable: {exc}", settings.queue_max_attempts)
                continue
            outdated = [c for c in group if c.schema_version != schema.version]
            if outdated:
                message = (
                    f"{source} is now version {schema.version}; run the records again with batch_extract"
                )
                _fail_claims(sessions, outdated, message, settings.queue_max_attempts)
            context = new_context(
                sessions, settings, schema, engines, flow="reprocess_failed", source=source, redo=True
            )
            record_ids = [c.record_id for c in group if c.schema_version == schema.version]
            summaries.append(run_chunks(context, record_ids, settings.chunk_size))
    return summaries


def _fail_claims(sessions: Any, claims: list[Claim], error: str, max_attempts: int) -> None:
    """Count a try against entries that cannot be reprocessed, so they end dead instead of stuck claimed."""
    with sessions() as session:
        for claim in claims:
            stand_in = Schema(claim.schema_name, claim.schema_version, {}, claim.schema_source)
            record_failure(session, claim.record_id, stand_in, error, max_attempts=max_attempts)
        session.commit()
