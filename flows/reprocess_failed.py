"""Flow `reprocess_failed`: drain the retry queue, each due entry claimed by exactly one worker.

Claims are atomic (PostgreSQL `FOR UPDATE SKIP LOCKED`; SQLite one `UPDATE ... RETURNING` inside
`BEGIN IMMEDIATE`), committed before any model is called, and put back if a worker dies holding them
(after `claim_timeout_s`, or at once where it was a process of this host that is gone: its runs are
marked crashed before anything is claimed); a live worker refreshes its claims with the run's
heartbeat, and writes only results whose records it still holds, so a slow worker never overwrites a
faster one. Each entry
carries the schema body it failed under, so a worker in another directory (or on another machine)
needs no file path. Reprocessing may use other settings than the nightly run, such as a bigger
model or budget: pass them as `overrides` (`formwork retry --set reasoning_max_tokens=1024`).

An entry is a `retry` (the same reader again) or an `escalation`: a row held back only by its values'
thresholds, which the same reader would answer the same. An escalation is read by the stronger reader
its entry names (`escalate_to`, or this flow's parameter), and its values join those the first reader
certified (tasks.escalation.combine). Its own calibration was measured on all records, not on the
escalated ones (the hard ones, where its precision is lower), so that one certifies none of its values
here: each is delivered `unsure`, saying so. Where a calibration of it measured on the records this first
reader, under the calibration its run applied, escalates exists (`formwork eval --calibrate
--escalated-from`; db.escalated_calibrations), the run holds its values to that one instead, and they
are certified where they pass it; entries are grouped by first reader for that. The entry names that
reader whole (flows.run_policy.stored_reader), never with its server's password.

A retry is read by the reader whose run queued it (its entry's `setup`, NAME@MODE, as results are kept
per reader): a catalogue model by its name, a server or GGUF file as this worker's settings name it, in
the entry's mode. Where the worker's settings do not open that reader, its claims are given back, never
read by another reader (whose row the result would then be, leaving the entry unsettled).

Opening those readers is flows.reprocess_readers; naming this worker and finding this host's dead ones,
flows.queue_worker.
"""

from __future__ import annotations

import json
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import replace
from datetime import timedelta
from typing import Any, Literal

from prefect import get_run_logger

from formwork.db.claims import mark_crashed, mark_gone, queue_workers
from formwork.db.escalated_calibrations import FirstReader, escalated_run_policy, first_readers
from formwork.db.queries import RunSummary
from formwork.db.queue import Claim, claim_due, record_failure, release_stale, settle_changed_texts
from formwork.db.session import session_factory
from formwork.flows.chunk import RunContext
from formwork.flows.queue_worker import dead_here, worker_name
from formwork.flows.reprocess_readers import Reader, open_reader
from formwork.flows.run_start import new_context, replay_journals
from formwork.flows.runner import chunked, run_chunks
from formwork.flows.secret_free import secret_free_flow
from formwork.schemas.registry import Schema, SchemaProblem, load_checked_body, load_checked_schema
from formwork.tasks.redact import redact
from formwork.tasks.settings import Settings


def secret_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """The overrides that must not be stored (Prefect stores flow parameters): every `SecretStr`
    setting, the database URL (the worker's own), and any value holding a password."""
    secret = Settings.secret_fields() | {"db_url"}
    return {k: v for k, v in overrides.items() if k in secret or redact(str(v)) != str(v)}


Group = tuple[str, int, str, Reader, FirstReader | None]  # schema, version, body, reader, escalated from


@secret_free_flow("reprocess_failed")
def reprocess_failed(
    db_url: str | None = None,
    limit: int = 100,
    overrides: dict[str, Any] | None = None,
    worker: str | None = None,
    kind: Literal["retry", "escalation"] | None = None,
    escalate_to: str | None = None,
    run_id: int | None = None,
) -> list[RunSummary]:
    """Claim up to `limit` due queue entries (of one `kind`, of run `run_id`'s records, if given) and
    read them again: a retry with the same reader (under `overrides`), an escalation with the stronger
    one its entry names, or `escalate_to` where given (tasks.escalation), whose values join the first
    reader's, unsure unless a calibration of it measured on what that first reader escalates applies
    (the module docstring). An entry whose record's text has changed since is settled stale, not read."""
    secret = sorted(secret_overrides({**(overrides or {}), "escalate_to": escalate_to}))
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
        crashed = mark_crashed(session, timedelta(seconds=settings.run_lease_s))  # before claims: a dead
        gone = mark_gone(session, dead_here(queue_workers(session), worker))  # worker's entries are due
        released = release_stale(session, timedelta(seconds=settings.claim_timeout_s))
        claims = claim_due(session, worker, limit, kind=kind, run_id=run_id)
        stale = settle_changed_texts(session, claims)
        firsts = _first_readers(session, [c for c in claims if c.kind == "escalation"])
    logger.info("claimed %d entries (%d stale claims and %d of dead workers put back, %d runs found "
                "crashed); %d settled stale: their text changed", len(claims), released, gone, crashed,
                len(stale))  # fmt: skip
    groups: dict[Group, list[Claim]] = defaultdict(list)
    for claim in claims:
        if claim.entry_id in stale:
            continue
        stronger = (escalate_to or claim.escalate_to) if claim.kind == "escalation" else None
        reader = (stronger, claim.setup if stronger is None else None)  # a retry: the reader that queued it
        groups[(claim.schema_name, claim.schema_version, json.dumps(claim.schema_body, sort_keys=True),
                reader, firsts.get(claim.record_id) if stronger else None)].append(claim)  # fmt: skip
    summaries: list[RunSummary] = []
    pending = list(groups.items())
    with ExitStack() as stack:
        opened: dict[Reader, tuple[Settings, Any]] = {}
        while pending:
            (*_, reader, first), group = pending.pop(0)
            stronger = reader[0]
            schema = _schema_of(sessions, group, settings.queue_max_attempts)
            if schema is None:
                continue
            if reader not in opened:
                waiting = [group, *(later for _, later in pending)]
                opened[reader] = open_reader(stack, sessions, worker, settings, reader, waiting)
            reading, engines = opened[reader]
            context = new_context(
                sessions, reading, schema, engines, flow="reprocess_failed", source=schema.source,
                worker=worker, escalating=stronger is not None,
            )  # fmt: skip
            if stronger is not None:
                context = _on_escalated(sessions, context, first)
            records = chunked((c.record_id for c in group), settings.chunk_size)
            summaries.append(run_chunks(context, records, replayed if not summaries else 0))
    return summaries


def _first_readers(session: Any, claims: list[Claim]) -> dict[int, FirstReader | None]:
    """Per escalated record, the first reader and the calibration its row was decided by."""
    found: dict[int, FirstReader | None] = {}
    by_schema: dict[tuple[str, int], list[int]] = defaultdict(list)
    for claim in claims:
        by_schema[(claim.schema_name, claim.schema_version)].append(claim.record_id)
    for (name, version), records in by_schema.items():
        found |= first_readers(session, records, name, version)
    return found


def _on_escalated(sessions: Any, context: RunContext, first: FirstReader | None) -> RunContext:
    """`context` holding the stronger reader's values to its calibration measured on the records `first`
    escalates, where one exists (the run records it); else as it is, its values unsure in the rows."""
    with sessions() as session:
        found = escalated_run_policy(session, context.run_id, first)
        session.commit()
    if found is None:
        return context
    return replace(context, options=found.applied_to(context.options), measured_on_escalated=True)


def _schema_of(sessions: Any, group: list[Claim], max_attempts: int) -> Schema | None:
    """The schema a group of entries failed under (the body stored with them; the file for entries
    from before bodies were stored); None, with a try counted on each, when it cannot be used."""
    first = group[0]
    try:
        schema = (load_checked_body(first.schema_body, first.schema_source) if first.schema_body
                  else load_checked_schema(first.schema_source))  # fmt: skip
    except SchemaProblem as exc:  # the schema file moved or broke: say so on each entry
        _fail_claims(sessions, group, f"schema unusable: {exc}", max_attempts)
        return None
    if schema.version != first.schema_version:
        message = f"{first.schema_source} is now version {schema.version}; run it with batch_extract"
        _fail_claims(sessions, group, message, max_attempts)
        return None
    return schema


def _fail_claims(sessions: Any, claims: list[Claim], error: str, max_attempts: int) -> None:
    """Count a try against entries that cannot be reprocessed, so they end dead instead of stuck claimed."""
    with sessions() as session:
        for claim in claims:
            body = claim.schema_body or {}
            stand_in = Schema(claim.schema_name, claim.schema_version, body, claim.schema_source)
            record_failure(session, claim.record_id, stand_in, error, max_attempts=max_attempts,
                           setup=claim.setup)  # fmt: skip
        session.commit()
