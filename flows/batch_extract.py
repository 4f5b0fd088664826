"""Flow `batch_extract`: every record of a source through the two passes into the database.

The order protects the data: the schema is loaded, linted and compiled and the engines checked before
anything else (a broken schema or a dead server refuses the run and touches nothing); records are
stored before any model sees them (a run that dies loses nothing, and the next run over the same
source resumes where it stopped). A schema whose body changed under the same `x-version` is refused
before any write: its old results would otherwise pass for results of the new body.

`db_url` is a flow parameter for deployments, and Prefect stores parameters: a URL with a password
is refused before the run is created (flows.secret_free; put it in FORMWORK_DB_URL or formwork.toml
on the worker instead).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import timedelta
from itertools import islice
from pathlib import Path
from typing import Literal

from prefect import get_run_logger

from formwork.db.claims import left_behind
from formwork.db.queries import RunSummary
from formwork.db.session import session_factory
from formwork.db.store import check_schema_body, records_without_result, store_records
from formwork.db.watermarks import advance_watermark, rows_since_watermark
from formwork.flows.chunk import RunContext
from formwork.flows.reprocess_failed import reprocess_failed
from formwork.flows.run_policy import with_stored_reader
from formwork.flows.run_start import checked_engines, new_context, replay_journals
from formwork.flows.runner import chunked, run_chunks
from formwork.flows.secret_free import secret_free_flow
from formwork.schemas.registry import load_checked_schema
from formwork.tasks.settings import Settings
from formwork.tasks.sources import InputRecord, read_records
from formwork.tasks.sources.sql import SqlRows, SqlSelection, sql_selection, url_label


def _stored_pending(
    context: RunContext, label: str, records: Iterable[InputRecord], size: int
) -> Iterator[int]:
    """Store the input a chunk at a time, yielding the ids still without a result as they are stored.

    Extraction starts once the first chunk is stored, not once the whole input is: the first model
    call of a 10,000-record run waited for every record to be written.
    """
    for batch in chunked(records, size):

        def store(batch: list[InputRecord] = batch) -> list[int]:
            with context.sessions() as session:  # closed before yielding: an open write transaction
                ids = store_records(session, label, batch)  # would block every chunk (one SQLite writer)
                pending = records_without_result(session, ids, context.schema, context.run_id)
                session.commit()
            return pending

        yield from context.database.call(store, "store the input")


def _then_left_behind(pending: Iterable[int], context: RunContext, label: str) -> Iterator[int]:
    """The ids read from the source, then its stored records that a killed run left without a result.

    A SQL source reads only from its watermark on, so a row stored by a run that died before its model
    calls would otherwise never be read again.
    """
    seen: set[int] = set()
    for record_id in pending:
        seen.add(record_id)
        yield record_id

    def behind() -> list[int]:
        with context.sessions() as session:
            found = left_behind(session, label, context.schema, context.lease)
            session.commit()
        return [i for i in found if i not in seen]

    yield from context.database.call(behind, "find records left behind")


def source_label(source: str, sql: SqlSelection | None = None) -> str:
    """Records are keyed by their source's absolute path (or password-free URL and table or query),
    so the same source resumes the same records."""
    return f"{url_label(source)}#{sql.label()}" if sql else str(Path(source).resolve())


@secret_free_flow("batch_extract")
def batch_extract(
    source: str,
    schema: str,
    db_url: str | None = None,
    limit: int | None = None,
    chunk_size: int | None = None,
    follow_symlinks: bool = False,
    query: str | None = None,
    table: str | None = None,
    id_column: str = "id",
    text_column: str = "text",
    updated_column: str | None = None,
    wait: bool = False,
    escalate_to: str | None = None,
    escalate: Literal["queue", "now"] | None = None,
) -> RunSummary:
    """Extract `schema` from every record of `source` (JSONL, CSV, a folder of .txt files, or a
    database URL with `query` or `table`: only rows new or changed since the last finished run).
    Records another run holds are counted in the summary, or waited for and processed (`wait`). Rows
    held back only by their values' thresholds wait for the stronger reader `escalate_to` (a setting
    too), or are read by it before the run ends (`escalate` now: the retry queue's own path, for this
    run's own rows)."""
    given = {"db_url": db_url, "escalate_to": escalate_to, "escalate": escalate}
    settings = Settings(**{name: value for name, value in given.items() if value})
    queued = with_stored_reader(settings)  # its escalations name the reader whole, with no password
    chosen = load_checked_schema(schema)
    sql = sql_selection(source, query, table, id_column, text_column, updated_column)
    # a missing or unreadable source is refused here, before any write
    window = timedelta(seconds=settings.sql_reread_s)
    records = (
        rows_since_watermark(settings.db_url, source, sql, chosen, window)
        if sql
        else read_records(source, follow_symlinks=follow_symlinks)
    )
    sessions = session_factory(settings.db_url)
    replayed = replay_journals(sessions, settings)  # before any model is called, or even loaded
    with checked_engines(settings, chosen) as engines:
        label = source_label(source, sql)
        with sessions() as session:
            check_schema_body(session, chosen)
        context = new_context(sessions, queued, chosen, engines, flow="batch_extract", source=label,
                              wait=wait)  # fmt: skip
        get_run_logger().info("run %s: %s from %s", context.run_id, chosen.label, label)
        size = chunk_size or settings.chunk_size
        pending = _stored_pending(context, label, islice(records, limit), size)
        if sql:
            pending = _then_left_behind(pending, context, label)
        summary = run_chunks(context, chunked(islice(pending, limit), size), replayed)
        if isinstance(records, SqlRows):  # finished: the next run starts after what this one read
            with sessions() as session:
                advance_watermark(session, records, chosen, summary.run_id)
    if settings.escalate == "now" and settings.escalate_to and summary.records:
        summary.escalations = reprocess_failed(
            db_url=db_url, limit=summary.records, kind="escalation", run_id=summary.run_id
        )
    return summary
