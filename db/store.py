"""Writes: records before any model sees them, then finished records' calls and results as they come.

`save_outcomes` stores a group of finished records in one transaction: the chunk's writer (db.writer)
hands it, through db.keeping's safety net, what finished within about a second, so a slow engine writes
one record at a time and a fast one a group at a time (10,000 rows took 2–46 s one by one and under a
second in batches of 1,000). Every write passes its rows as parameters of one statement (an
executemany), never as a VALUES list built into the statement: a statement with the rows inside is
compiled again for every group, and that compiling cost more CPU than the rest of storing (issue 31).
Results are upserted on (record, schema name, schema version, reader setup), so a resumed or repeated run
updates the row it wrote before instead of adding a second one, and a run with another model or mode
(another setup, NAME@MODE: flows.run_start.reader_setup) reads the records again into rows of its own;
`run_results` keeps what each run produced. Records
are immutable (unique per source, key and text hash), so a result always belongs to the exact text it
was extracted from.

Nothing here may abort a night on one odd value: every string is made storable on the way in
(db.clean), and db.keeping falls back to storing a group's records one by one when the group's
commit fails, so one bad row fails alone and every paid model call is kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import and_, insert, or_, select
from sqlalchemy.orm import Session

from formwork.db.claims import release_held
from formwork.db.clean import clean_message, clean_text, redacted, storable
from formwork.db.models import ModelCall, Record, Result, RetryEntry, Run, RunResult, utcnow
from formwork.db.queue import record_failure, record_success, release_worker
from formwork.db.session import upsert_insert
from formwork.schemas.registry import Schema
from formwork.tasks.calls import Outcome
from formwork.tasks.confidence.readings import field_key
from formwork.tasks.sources import InputRecord

BATCH = 1000
KEY_LIMIT = 200  # records.key is String(200)


class SchemaChanged(ValueError):
    """Results exist under this schema name and version, made from another body: bump the version."""


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def storable_key(key: str) -> str:
    """A key the column can hold: cleaned, and a too-long one cut with a hash of the whole kept."""
    key = clean_text(key)
    if len(key) <= KEY_LIMIT:
        return key
    return f"{key[: KEY_LIMIT - 18]}…#{hashlib.sha256(key.encode()).hexdigest()[:16]}"


@dataclass(frozen=True)
class QueuePolicy:
    """Which results wait in the retry queue, and how many tries an entry gets before it is dead."""

    include_partial: bool = False
    max_attempts: int = 5
    escalate_to: str | None = None  # the stronger reader for rows held back only by their thresholds
    escalating: bool = False  # this run is the escalation: a row still unsure has no one else to go to
    # the fields the stronger reader's calibration certifies; None where that is known only once it reads
    escalate_fields: tuple[str, ...] | None = None

    def wants(self, outcome: Outcome, tries: int = 0) -> str | None:
        """What the outcome waits for in the queue: `retry` (the same reader again: a failed row, or a
        partial one with `include_partial`), `escalation` (the stronger reader named, where it certifies
        a field the row left unsure or whose value the judge refused), or None. `tries`: how often the
        same reader has read it from the queue already (its entry's attempts).

        A row held back only by its values' thresholds never waits for the same reader: greedy, it would
        answer the same. A row whose values the judge refused (not in the text) waits for the same
        reader while a retry, told what was refused, may mend it; where no retry is coming (a partial row
        without `include_partial`) or the last one is spent, what the first reader cannot settle is what
        the stronger one is for. None waits for a stronger reader that certifies none of those fields:
        it could change nothing."""
        verdict = outcome.verdict
        if not outcome.queueable:
            return None
        stronger = bool(self.escalate_to) and not self.escalating
        if verdict.unsure_only:
            unsure = {field_key(t["path"]) for t in verdict.trust or [] if not t.get("certified")}
            return "escalation" if stronger and self._reaches(unsure) else None
        again = verdict.status == "failed" or (verdict.status == "partial" and self.include_partial)
        refused = {field_key(v["path"]) for v in verdict.values if v.get("verdict") == "refused"}
        if stronger and refused and self._reaches(refused) and (not again or tries + 1 >= self.max_attempts):
            return "escalation"
        return "retry" if again else None

    def _reaches(self, fields: set[str]) -> bool:
        """Whether the stronger reader certifies one of `fields` (unknown until it reads: assume it may)."""
        if self.escalate_fields is None:
            return True
        return bool(fields & set(self.escalate_fields))


def start_run(session: Session, schema: Schema | None = None, **fields: Any) -> int:
    body: dict[str, Any] = {}  # the schema as written; settings redacted
    if schema is not None:
        body = {"schema_name": schema.name, "schema_version": schema.version,
                "schema_hash": schema.digest, "schema_body": schema.body}  # fmt: skip
    run = Run(heartbeat_at=utcnow(), **redacted(fields), **storable(body))
    session.add(run)
    session.commit()
    return run.id


def finish_run(session: Session, run_id: int, state: str = "finished", only_running: bool = False) -> None:
    """Close the run (unless `only_running` and it is closed already); a reprocessing run that crashed
    gives its retry-queue claims back with it."""
    run = session.get(Run, run_id)
    if run is not None and (run.state == "running" or not only_running):
        run.state, run.finished_at = state, utcnow()
        if state == "crashed" and run.worker is not None:
            release_worker(session, run.worker, run.finished_at)
        session.commit()


def check_schema_body(session: Session, schema: Schema) -> None:
    """Refuse a schema whose body changed while its version stayed: its old results would look current."""
    other = session.scalar(
        select(Result.schema_hash)
        .where(Result.schema_name == schema.name, Result.schema_version == schema.version,
               Result.schema_hash.not_in(["", schema.digest]))
        .limit(1)
    )  # fmt: skip
    if other is not None:
        raise SchemaChanged(
            f"schema {schema.label} ({schema.source}) differs from the body that made the stored "
            f'{schema.label} results; bump its "x-version" so both stay explained'
        )


def store_records(session: Session, source: str, records: Iterable[InputRecord]) -> list[int]:
    """Upsert records by (source, key, text hash), a thousand per transaction; ids in input order."""
    ids: list[int] = []
    batch: list[dict[str, Any]] = []
    source = clean_message(source)  # a URL: its password never stored

    def flush() -> None:
        unique = {(row["key"], row["text_hash"]): row for row in batch}
        statement = upsert_insert(session, Record.__table__)
        statement = statement.on_conflict_do_update(
            index_elements=["source", "key", "text_hash"],
            set_={"meta": statement.excluded.meta, "problem": statement.excluded.problem},
        )
        session.execute(statement, list(unique.values()))
        found = {
            (key, digest): record_id
            for key, digest, record_id in session.execute(
                select(Record.key, Record.text_hash, Record.id).where(
                    Record.source == source, Record.key.in_({key for key, _ in unique})
                )
            )
        }
        session.commit()
        ids.extend(found[(row["key"], row["text_hash"])] for row in batch)
        batch.clear()

    for record in records:
        text = clean_text(record.text)
        batch.append({"source": source, "key": storable_key(record.key), "text": text,
                      "text_hash": text_digest(text), "meta": storable(record.meta),
                      "problem": redacted(record.problem)})  # fmt: skip
        if len(batch) >= BATCH:
            flush()
    if batch:
        flush()
    return list(dict.fromkeys(ids))


def run_setup(session: Session, run_id: int) -> str:
    """The reader of run `run_id` (NAME@MODE), as its results are keyed; "" for a run from before 0017."""
    return session.scalar(select(Run.setup).where(Run.id == run_id)) or ""


def records_without_result(
    session: Session, record_ids: Sequence[int], schema: Schema, run_id: int | None = None
) -> list[int]:
    """The ids among `record_ids` that have no result yet for this schema version (resume support) from
    the reader of run `run_id`: a run with another model or mode reads them again. Without `run_id`, a
    result from any reader counts."""
    done: set[int] = set()
    same_reader = [] if run_id is None else [Result.setup == run_setup(session, run_id)]
    for start in range(0, len(record_ids), BATCH):
        chunk = record_ids[start : start + BATCH]
        done.update(
            session.scalars(
                select(Result.record_id).where(
                    Result.record_id.in_(chunk),
                    Result.schema_name == schema.name,
                    Result.schema_version == schema.version,
                    *same_reader,
                )
            )
        )
    return [i for i in record_ids if i not in done]


def row_setups(session: Session, run_id: int, schema: Schema, record_ids: Sequence[int], escalating: bool
               ) -> dict[int, str]:  # fmt: skip
    """The setup each record's result row is stored under: the run's own reader, except in an escalation,
    whose values join the row the record was sent from (the latest one stored: tasks.escalation, through
    db.queries.earlier_rows), so that reader's row is completed rather than a second one started."""
    setups = dict.fromkeys(record_ids, run_setup(session, run_id))
    if escalating:
        found = session.execute(
            select(Result.record_id, Result.setup)
            .where(Result.record_id.in_(record_ids), Result.schema_name == schema.name,
                   Result.schema_version == schema.version)
            .order_by(Result.updated_at, Result.id)
        ).all()  # fmt: skip
        setups.update({record: setup for record, setup in found})  # the latest row of each last
    return setups


def _result_row(run_id: int, schema: Schema, outcome: Outcome, text_hash: str, setup: str) -> dict[str, Any]:
    verdict = outcome.verdict
    return storable({
        "record_id": outcome.record_id, "schema_name": schema.name, "schema_version": schema.version,
        "setup": setup, "run_id": run_id, "text_hash": text_hash, "schema_hash": schema.digest,
        "status": verdict.status,
        "data": verdict.data, "errors": redacted(verdict.errors), "nulled": verdict.nulled,
        "evidence": verdict.evidence, "trust": verdict.trust or None,
        "reasoning_finish": outcome.reasoning_finish, "formatting_finish": outcome.formatting_finish,
        "retryable": outcome.retryable, "attempts": outcome.attempts, "updated_at": utcnow(),
    })  # fmt: skip


HISTORY = (
    "status",
    "data",
    "errors",
    "nulled",
    "reasoning_finish",
    "formatting_finish",
    "attempts",
    "evidence",
    "trust",
)
KEEP = {"ok", "partial"}  # a stored result of these statuses is never replaced by a failed one


def save_outcomes(
    session: Session, run_id: int, schema: Schema, outcomes: Sequence[Outcome], queue: QueuePolicy,
    skip_stored: bool = False,
) -> None:  # fmt: skip
    """Store a group's calls, results, history, claims and retry-queue changes in one transaction.

    A record that another run holds keeps its result (only this run's calls and history are stored);
    a result that is `ok` or `partial` is never replaced by a `failed` one (a retry that hit an outage).
    `skip_stored`: leave out the records this run has stored already (a write tried again after its
    connection dropped during COMMIT, or a journal replayed, db.keeping), so no call is stored twice.
    """
    if skip_stored:
        ids = [o.record_id for o in outcomes]
        stored = set(session.scalars(select(RunResult.record_id).where(
            RunResult.run_id == run_id, RunResult.record_id.in_(ids))))  # fmt: skip
        outcomes = [o for o in outcomes if o.record_id not in stored]
    if not outcomes:
        session.commit()
        return
    ids = [o.record_id for o in outcomes]
    hashes = dict(session.execute(select(Record.id, Record.text_hash).where(Record.id.in_(ids))).all())
    setups = row_setups(session, run_id, schema, ids, queue.escalating)
    rows = {o.record_id: _result_row(run_id, schema, o, hashes.get(o.record_id, ""), setups[o.record_id])
            for o in outcomes}  # fmt: skip
    calls = [{"run_id": run_id, "record_id": o.record_id, "created_at": utcnow(),
              **storable(vars(call)), "error": redacted(call.error)}  # the answer as given; errors redacted
             for o in outcomes for call in o.calls]  # fmt: skip
    if calls:  # core INSERTs: the ORM's unit of work cost more CPU than the rest of a record's pipeline
        session.execute(insert(ModelCall.__table__), calls)
    session.execute(
        insert(RunResult.__table__),
        [{"run_id": run_id, "record_id": i, "created_at": utcnow(), **{k: row[k] for k in HISTORY}}
         for i, row in rows.items()],
    )  # fmt: skip
    held_elsewhere = release_held(session, run_id, schema, ids)
    mine = [o for o in outcomes if o.record_id not in held_elsewhere]
    stored = {
        record: status
        for record, setup, status in session.execute(
            select(Result.record_id, Result.setup, Result.status).where(
                Result.record_id.in_(ids), Result.schema_name == schema.name,
                Result.schema_version == schema.version,
            )
        )
        if setups[record] == setup  # the row this run writes: its reader's
    }  # fmt: skip
    if mine:
        statement = upsert_insert(session, Result.__table__)
        key_columns = ["record_id", "schema_name", "schema_version", "setup"]
        status = Result.__table__.c.status
        replaceable = and_(*(status != kept for kept in sorted(KEEP)))  # no IN list: not in an executemany
        session.execute(
            statement.on_conflict_do_update(
                index_elements=key_columns,
                set_={key: statement.excluded[key] for key in rows[ids[0]] if key not in key_columns},
                where=or_(replaceable, statement.excluded.status != "failed"),
            ),
            [rows[o.record_id] for o in mine],
        )
    succeeded = []
    waiting = _waiting(session, schema, [o.record_id for o in mine if o.verdict.status != "ok"], setups)
    for outcome in mine:
        kept_ok = stored.get(outcome.record_id) == "ok" and outcome.verdict.status == "failed"
        tries, was, reader = waiting.get(outcome.record_id, (0, None, None))
        policy = queue  # a retry's stronger reader is the one its first run named, if this run names none
        if reader and not queue.escalate_to and not queue.escalating:
            policy = replace(queue, escalate_to=reader, escalate_fields=None)
        kind = policy.wants(outcome, tries)
        if kind and not kept_ok:
            error = clean_message("; ".join(outcome.verdict.errors) or outcome.verdict.status)
            if kind == "escalation" and was not in (None, "escalation"):  # a new reader: its tries anew
                record_success(session, [outcome.record_id], schema, setups)
            # a retry names the stronger reader too: where its tries are spent, it goes there
            stronger = policy.escalate_to if kind == "escalation" or not policy.escalating else None
            record_failure(session, outcome.record_id, schema, error, max_attempts=queue.max_attempts,
                           kind=kind, escalate_to=stronger, setup=setups[outcome.record_id])  # fmt: skip
        else:
            succeeded.append(outcome.record_id)
    record_success(session, succeeded, schema, setups)
    session.commit()


def _waiting(
    session: Session, schema: Schema, record_ids: list[int], setups: dict[int, str]
) -> dict[int, tuple[int, str, str | None]]:
    """The queue entry each record has under `schema` for the reader of its row (`setups`): (its
    attempts, its kind, its stronger reader)."""
    if not record_ids:
        return {}
    found = session.execute(
        select(RetryEntry.record_id, RetryEntry.setup, RetryEntry.attempts, RetryEntry.kind,
               RetryEntry.escalate_to).where(
            RetryEntry.record_id.in_(record_ids), RetryEntry.schema_name == schema.name,
            RetryEntry.schema_version == schema.version,
            RetryEntry.setup.in_({setups[record] for record in record_ids}),
        )
    ).all()  # fmt: skip
    return {record: (attempts, kind, reader) for record, setup, attempts, kind, reader in found
            if setups[record] == setup}  # fmt: skip
