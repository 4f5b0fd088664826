"""Flow `batch_extract`: every record of a source through the two passes into the database.

The order protects the data: the schema is loaded, linted and compiled and the engines checked before
anything else (a broken schema or a dead server refuses the run and touches nothing); records are
stored before any model sees them (a run that dies loses nothing, and the next run over the same
source resumes where it stopped). A schema whose body changed under the same `x-version` is refused
before any write: its old results would otherwise pass for results of the new body.

`db_url` is a flow parameter for deployments, and Prefect stores parameters: a URL with a password
is refused here (put it in FORMWORK_DB_URL or formwork.toml on the worker instead).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path

from prefect import flow, get_run_logger
from sqlalchemy.orm import Session

from db.queries import RunSummary
from db.session import session_factory
from db.store import check_schema_body, records_without_result, store_records
from flows.runner import checked_engines, chunked, new_context, run_chunks
from schemas.registry import Schema, load_checked_schema
from tasks.redact import has_password
from tasks.settings import Settings
from tasks.sources import InputRecord, read_records

# pydantic warns that a parameter named `schema` shadows a BaseModel attribute of Prefect's parameter
# model; the name is the flow's public API and the shadowing is harmless there.
warnings.filterwarnings("ignore", message='Field name "schema"', category=UserWarning)


def _stored_pending(
    sessions: Callable[[], Session], label: str, records: Iterable[InputRecord], schema: Schema, size: int
) -> Iterator[int]:
    """Store the input a chunk at a time, yielding the ids still without a result as they are stored.

    Extraction starts once the first chunk is stored, not once the whole input is: the first model
    call of a 10,000-record run waited for every record to be written.
    """
    for batch in chunked(records, size):
        with sessions() as session:  # closed before yielding: an open write transaction would block
            ids = store_records(session, label, batch)  # every chunk (SQLite has one writer)
            pending = records_without_result(session, ids, schema)
            session.commit()
        yield from pending


def source_label(source: str) -> str:
    """Records are keyed by their source's absolute path, so the same file resumes the same records."""
    return str(Path(source).resolve())


@flow(name="batch_extract", validate_parameters=True)
def batch_extract(
    source: str,
    schema: str,
    db_url: str | None = None,
    limit: int | None = None,
    chunk_size: int | None = None,
    follow_symlinks: bool = False,
) -> RunSummary:
    """Extract `schema` from every record of `source` (JSONL, CSV or a folder of .txt files)."""
    if db_url and has_password(db_url):
        raise ValueError("db_url must not carry a password (flow parameters are stored): set FORMWORK_DB_URL")
    settings = Settings(**({"db_url": db_url} if db_url else {}))
    chosen = load_checked_schema(schema)
    records = read_records(source, follow_symlinks=follow_symlinks)  # refused here, before any write
    with checked_engines(settings) as engines:
        sessions = session_factory(settings.db_url)
        label = source_label(source)
        with sessions() as session:
            check_schema_body(session, chosen)
        context = new_context(sessions, settings, chosen, engines, flow="batch_extract", source=label)
        get_run_logger().info("run %s: %s from %s", context.run_id, chosen.label, label)
        size = chunk_size or settings.chunk_size
        return run_chunks(
            context, chunked(_stored_pending(sessions, label, islice(records, limit), chosen, size), size)
        )
