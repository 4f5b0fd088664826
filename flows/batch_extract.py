"""Flow `batch_extract`: every record of a source through the two passes into the database.

The order protects the data: the schema is loaded, linted and compiled before anything else (a broken
schema refuses the run and touches nothing); records are stored before any model sees them (a run that
dies loses nothing, and the next run over the same source resumes where it stopped).
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from prefect import flow, get_run_logger

from db.queries import RunSummary, run_summary
from db.session import session_factory
from db.store import finish_run, records_without_result, start_run, store_records
from schemas.lint import grammar_compile_error
from schemas.registry import SchemaProblem, load_schema
from tasks.chunk import RunContext, process_chunk
from tasks.engines import check_engines, open_engines
from tasks.extract import ExtractOptions
from tasks.settings import Settings
from tasks.sources import read_records


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
) -> RunSummary:
    """Extract `schema` from every record of `source` (JSONL, CSV or a folder of .txt files)."""
    settings = Settings()
    url = db_url or settings.db_url
    chosen = load_schema(schema)
    problem = grammar_compile_error(chosen.body)
    if problem:
        raise SchemaProblem(f"{chosen.source}: {problem}")
    reasoner, formatter = open_engines(settings)
    logger = get_run_logger()
    for found in check_engines(reasoner, formatter):
        logger.info("engine ready: %s", found)
    sessions = session_factory(url)

    label = source_label(source)
    with sessions() as session:
        record_ids = store_records(session, label, islice(read_records(source), limit))
        run_id = start_run(
            session,
            flow="batch_extract",
            source=label,
            schema_name=chosen.name,
            schema_version=chosen.version,
            engine=settings.engine,
            reasoning_model=reasoner.model,
            formatting_model=formatter.model,
        )
        pending = records_without_result(session, record_ids, chosen)
    logger.info(
        "run %s: %d records, %d without a result for %s", run_id, len(record_ids), len(pending), chosen.label
    )

    context = RunContext(
        run_id=run_id,
        schema=chosen,
        reasoner=reasoner,
        formatter=formatter,
        options=ExtractOptions(
            reasoning_max_tokens=settings.reasoning_max_tokens,
            reasoning_temperature=settings.reasoning_temperature,
            reasoning_repetition_penalty=settings.reasoning_repetition_penalty,
            format_max_tokens=settings.format_max_tokens,
            max_attempts=settings.max_attempts,
        ),
        sessions=sessions,
    )
    size = chunk_size or settings.chunk_size
    state = "crashed"
    try:
        for start in range(0, len(pending), size):
            process_chunk(context, pending[start : start + size])
        state = "finished"
    finally:
        with sessions() as session:
            finish_run(session, run_id, state)
    with sessions() as session:
        return run_summary(session, run_id)
