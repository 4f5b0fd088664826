"""Flow `reprocess_failed`: drain the retry queue, each due entry claimed by exactly one worker.

Claims are atomic (PostgreSQL `FOR UPDATE SKIP LOCKED`; SQLite one `UPDATE ... RETURNING` inside
`BEGIN IMMEDIATE`), committed before any model is called, and put back if a worker dies holding them
(after `claim_timeout_s`); a live worker refreshes its claims with the run's heartbeat, and writes
only results whose records it still holds, so a slow worker never overwrites a faster one. Each entry
carries the schema body it failed under, so a worker in another directory (or on another machine)
needs no file path. Reprocessing may use other settings than the nightly run, such as a bigger
model or budget: pass them as `overrides` (`formwork retry --set reasoning_max_tokens=1024`).
"""

from __future__ import annotations

import json
import os
import socket
from collections import defaultdict
from datetime import timedelta
from typing import Any

from prefect import get_run_logger

from formwork.db.queries import RunSummary
from formwork.db.queue import Claim, claim_due, record_failure, release_stale
from formwork.db.session import session_factory
from formwork.flows.runner import checked_engines, chunked, new_context, replay_journals, run_chunks
from formwork.flows.secret_free import secret_free_flow
from formwork.schemas.registry import Schema, SchemaProblem, load_checked_body, load_checked_schema
from formwork.tasks.redact import redact
from formwork.tasks.settings import Settings


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def secret_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """The overrides that must not be stored (Prefect stores flow parameters): every `SecretStr`
    setting, the database URL (the worker's own), and any value holding a password."""
    secret = Settings.secret_fields() | {"db_url"}
    return {k: v for k, v in overrides.items() if k in secret or redact(str(v)) != str(v)}


@secret_free_flow("reprocess_failed")
def reprocess_failed(
    db_url: str | None = None,
    limit: int = 100,
    overrides: dict[str, Any] | None = None,
    worker: str | None = None,
) -> list[RunSummary]:
    """Claim up to `limit` due queue entries and run them through both passes again."""
    secret = sorted(secret_overrides(overrides or {}))
    if secret:
        raise ValueError(
            f"overrides {secret} must not be flow parameters (Prefect stores them): set them as "
            "FORMWORK_* variables on the worker, or use `formwork retry --set`, which does"
        )
    settings = Settings(**{**(overrides or {}), **({"db_url": db_url} if db_url else {})})
    sessions = session_factory(settings.db_url)
    logger = get_run_logger()
    worker = worker or worker_name()
    replayed = replay_journals(sessions, settings)  # a replayed record's entry is settled before claims
    with sessions() as session:
        released = release_stale(session, timedelta(seconds=settings.claim_timeout_s))
        claims = claim_due(session, worker, limit)
    logger.info("claimed %d entries (%d stale claims put back)", len(claims), released)
    if not claims:
        return []
    summaries = []
    with checked_engines(settings) as engines:
        by_schema: dict[tuple[str, int, str], list[Claim]] = defaultdict(list)
        for claim in claims:
            body_key = json.dumps(claim.schema_body, sort_keys=True)
            by_schema[(claim.schema_name, claim.schema_version, body_key)].append(claim)
        for group in by_schema.values():
            first = group[0]
            try:  # the body stored with the entry; entries from before bodies were stored: the file
                if first.schema_body:
                    schema = load_checked_body(first.schema_body, first.schema_source)
                else:
                    schema = load_checked_schema(first.schema_source)
            except SchemaProblem as exc:  # the schema file moved or broke: say so on each entry
                _fail_claims(sessions, group, f"schema unusable: {exc}", settings.queue_max_attempts)
                continue
            if schema.version != first.schema_version:
                message = f"{first.schema_source} is now version {schema.version}; run it with batch_extract"
                _fail_claims(sessions, group, message, settings.queue_max_attempts)
                continue
            context = new_context(
                sessions, settings, schema, engines, flow="reprocess_failed", source=schema.source,
                worker=worker,
            )  # fmt: skip
            records = chunked((c.record_id for c in group), settings.chunk_size)
            summaries.append(run_chunks(context, records, replayed if not summaries else 0))
    return summaries


def _fail_claims(sessions: Any, claims: list[Claim], error: str, max_attempts: int) -> None:
    """Count a try against entries that cannot be reprocessed, so they end dead instead of stuck claimed."""
    with sessions() as session:
        for claim in claims:
            body = claim.schema_body or {}
            stand_in = Schema(claim.schema_name, claim.schema_version, body, claim.schema_source)
            record_failure(session, claim.record_id, stand_in, error, max_attempts=max_attempts)
        session.commit()
