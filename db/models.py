"""Typed SQLAlchemy 2.0 models: the database is the record of every run, call and result.

- `records`: every input record, stored before any model sees it, unique per (source, key, text hash):
  a record's text never changes, so a result can never drift onto another text (a changed or fixed
  input line is a new record, extracted again);
- `runs`: one row per batch, with the schema (body and hash), engine and models it used, and a
  heartbeat that the running flow refreshes (a run whose heartbeat stops is marked crashed);
- `model_calls`: one row per model call (pass, attempt, model, prompt hash, tokens, finish reason,
  duration, output), so a result can always be explained;
- `results`: one row per (record, schema name, schema version, reader setup), the current answer of
  that reader (model and mode), with the text and schema hashes it was made from: idempotent, so a
  resumed or repeated run updates the same row, and a run with another model or mode adds its own;
- `run_results`: what each run produced, never updated, so `results --run N` stays true afterwards;
- `record_claims`: records in flight, so overlapping runs split the work instead of repeating it;
- `retry_queue`: failed records waiting for another try, with backoff, a dead-letter flag and the
  schema body itself (a worker elsewhere needs no file path to load it).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JSON,
        list[str]: JSON,
        datetime: DateTime(timezone=True),
    }


class Record(Base):
    __tablename__ = "records"
    __table_args__ = (UniqueConstraint("source", "key", "text_hash"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    source: Mapped[str] = mapped_column(String(500))
    key: Mapped[str] = mapped_column(String(200))
    text_hash: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    problem: Mapped[str | None] = mapped_column(Text)  # why the input itself is unusable, if it is
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    flow: Mapped[str] = mapped_column(String(60))
    source: Mapped[str] = mapped_column(String(500))
    schema_name: Mapped[str] = mapped_column(String(100))
    schema_version: Mapped[int] = mapped_column(Integer)
    schema_hash: Mapped[str] = mapped_column(String(64), default="")
    schema_body: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    engine: Mapped[str] = mapped_column(String(40))
    reasoning_model: Mapped[str] = mapped_column(String(200))
    formatting_model: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(20), default="running")  # running, finished, crashed
    # the confidence bounds it applied: a calibration's id and guarantee, or the uncalibrated default
    confidence: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    heartbeat_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # a reprocessing run's retry-queue worker (its claims' holder): marked crashed, it gives them back
    worker: Mapped[str | None] = mapped_column(String(100))
    # the reader, NAME@MODE (flows.runner.reader_setup): a record is read again under another (0017);
    # None for a run from before it
    setup: Mapped[str | None] = mapped_column(String(300))


class ModelCall(Base):
    __tablename__ = "model_calls"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    record_id: Mapped[int] = mapped_column(ForeignKey("records.id"), index=True)
    pass_name: Mapped[str] = mapped_column(String(20))  # reasoning, formatting
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    model: Mapped[str] = mapped_column(String(200))
    prompt_hash: Mapped[str] = mapped_column(String(32))
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    max_tokens: Mapped[int] = mapped_column(Integer)
    finish_reason: Mapped[str] = mapped_column(String(20))  # stop, length, abort, error
    duration_s: Mapped[float] = mapped_column(Float)
    output: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text)
    parse_step: Mapped[str | None] = mapped_column(String(20))  # prompt-json: the ladder step that worked
    # a formatting attempt as the judge saw it: its status, least confidence, and per value the path,
    # value, confidence and verdict (so a stored row shows why one attempt was kept over another)
    judged: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Answer:
    """What a run decided for a record: the columns of `results` (latest) and `run_results` (history)."""

    data: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))  # SQL NULL, not 'null'
    errors: Mapped[list[str]] = mapped_column(default=list)
    nulled: Mapped[list[str]] = mapped_column(default=list)
    reasoning_finish: Mapped[str | None] = mapped_column(String(20))
    formatting_finish: Mapped[str | None] = mapped_column(String(20))
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    evidence: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)  # tasks.grounding, per value
    # per value: each reading's value, probability and verdict, the score, threshold, certified (tasks.decide)
    trust: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)


class Result(Answer, Base):
    __tablename__ = "results"
    __table_args__ = (UniqueConstraint("record_id", "schema_name", "schema_version", "setup"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    record_id: Mapped[int] = mapped_column(ForeignKey("records.id"))
    schema_name: Mapped[str] = mapped_column(String(100))
    schema_version: Mapped[int] = mapped_column(Integer)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    # the reader that made it, NAME@MODE as its run's `setup` ("" where a run from before 0017 stored none)
    setup: Mapped[str] = mapped_column(String(300), default="", server_default="")
    text_hash: Mapped[str] = mapped_column(String(64), default="")
    schema_hash: Mapped[str] = mapped_column(String(64), default="", index=True)
    status: Mapped[str] = mapped_column(String(10), index=True)  # ok, partial, failed
    retryable: Mapped[bool] = mapped_column(default=False)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class RetryEntry(Base):
    __tablename__ = "retry_queue"
    # one entry per reader (NAME@MODE: runs.setup) as results are kept per reader (0018): another reader's
    # success on the record leaves this one's entry, and `formwork retry` reads it with this reader
    __table_args__ = (UniqueConstraint("record_id", "schema_name", "schema_version", "setup"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    record_id: Mapped[int] = mapped_column(ForeignKey("records.id"))
    schema_name: Mapped[str] = mapped_column(String(100))
    schema_version: Mapped[int] = mapped_column(Integer)
    setup: Mapped[str] = mapped_column(String(300), default="", server_default="")  # "": from before 0018
    schema_source: Mapped[str] = mapped_column(String(500))  # where it came from (for people)
    schema_hash: Mapped[str] = mapped_column(String(64), default="")
    schema_body: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))  # what to run
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str] = mapped_column(Text, default="")
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    state: Mapped[str] = mapped_column(String(12), default="waiting", index=True)  # waiting, claimed, dead
    # retry: the same reader again (a refusal a retry may fix); escalation: a row held back only by its
    # values' thresholds, waiting for the stronger reader `escalate_to` (tasks/escalation.py)
    kind: Mapped[str] = mapped_column(String(12), default="retry", server_default="retry")
    escalate_to: Mapped[str | None] = mapped_column(String(300))
    claimed_by: Mapped[str | None] = mapped_column(String(100))
    claimed_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class RunResult(Answer, Base):
    """One run's answer for one record, written once: the history behind `results --run N`."""

    __tablename__ = "run_results"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    record_id: Mapped[int] = mapped_column(ForeignKey("records.id"), index=True)
    status: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class RecordClaim(Base):
    """A record in flight for one schema version: overlapping runs skip what another run holds.

    The holder refreshes `claimed_at` while it works; a claim older than the claim timeout belonged to
    a run that died and may be taken over.
    """

    __tablename__ = "record_claims"
    __table_args__ = (UniqueConstraint("record_id", "schema_name", "schema_version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    record_id: Mapped[int] = mapped_column(ForeignKey("records.id"))
    schema_name: Mapped[str] = mapped_column(String(100))
    schema_version: Mapped[int] = mapped_column(Integer)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    claimed_at: Mapped[datetime] = mapped_column(default=utcnow)


class EvalRun(Base):
    """One mode scored on one gold set: the scores, and the run whose rows were scored."""

    __tablename__ = "eval_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    batch: Mapped[str] = mapped_column(String(40), index=True)  # the modes of one `formwork eval` share it
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    gold_source: Mapped[str] = mapped_column(String(500))
    schema_name: Mapped[str] = mapped_column(String(100))
    schema_version: Mapped[int] = mapped_column(Integer)
    mode: Mapped[str] = mapped_column(String(30))
    records: Mapped[int] = mapped_column(Integer)
    scores: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Watermark(Base):
    """How far a SQL source has been read for one schema version: nightly runs start from here.

    `value` is the highest updated (or id) value a finished run read, tagged with its type
    (db.watermarks) so it binds back as the same type the source's driver returned.
    """

    __tablename__ = "watermarks"
    __table_args__ = (UniqueConstraint("source", "selection", "schema_name", "schema_version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    source: Mapped[str] = mapped_column(String(500))  # the database URL, password redacted
    selection: Mapped[str] = mapped_column(String(300))  # table or query hash; the watermark column
    schema_name: Mapped[str] = mapped_column(String(100))
    schema_version: Mapped[int] = mapped_column(Integer)
    value: Mapped[dict[str, Any]] = mapped_column(JSON)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Calibration(Base):
    """Confidence thresholds chosen on gold data for one schema body, model and engine kind, with the
    lower bound on precision of ok they reached (tasks.evaluation.calibration). A run whose schema
    version and body hash, formatting model and engine match applies the newest one."""

    __tablename__ = "calibrations"

    id: Mapped[int] = mapped_column(primary_key=True)
    schema_name: Mapped[str] = mapped_column(String(100))
    schema_version: Mapped[int] = mapped_column(Integer)
    schema_hash: Mapped[str] = mapped_column(String(64), index=True)
    model: Mapped[str] = mapped_column(String(200))
    # the formatting model file's sha256 (embedded engine; None for a served model known by name), the
    # reasoning model, and whether grounded decoding chose the values: each changes a probability, and
    # a NULL (a calibration from before 0009) matches no run
    model_hash: Mapped[str | None] = mapped_column(String(64))
    reasoning_model: Mapped[str | None] = mapped_column(String(200))
    grounded: Mapped[bool | None] = mapped_column(Boolean)
    engine: Mapped[str] = mapped_column(String(40))
    mode: Mapped[str] = mapped_column(String(30))
    # how both passes sample (a digest) and the pipeline's version: NULL (before 0010) matches no run
    sampling: Mapped[str | None] = mapped_column(String(16))
    pipeline: Mapped[str | None] = mapped_column(String(40))
    method: Mapped[str] = mapped_column(String(40))  # per-value (0010); least-confidence: one score per row
    threshold: Mapped[float | None] = mapped_column(Float)  # None: no threshold reached the target
    target: Mapped[float] = mapped_column(Float)
    level: Mapped[float] = mapped_column(Float)
    bound: Mapped[float] = mapped_column(Float)  # the Clopper-Pearson lower bound reached
    kept: Mapped[int] = mapped_column(Integer)
    correct: Mapped[int] = mapped_column(Integer)
    # the values partial rows keep at the threshold, and the bound on their precision (None: none kept,
    # or a calibration from before 0008, which certified rows only)
    values_bound: Mapped[float | None] = mapped_column(Float)
    values_kept: Mapped[int | None] = mapped_column(Integer)
    values_correct: Mapped[int | None] = mapped_column(Integer)
    # per-value: the score model and each field's claim (threshold, kept, correct, bound, level)
    score_model: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    fields: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    gold_hash: Mapped[str] = mapped_column(String(64))
    gold_size: Mapped[int] = mapped_column(Integer)
    # where the gold came from: None, a gold set (eval); "audit": a person's audit of a run's own records
    source: Mapped[str | None] = mapped_column(String(20))
    # measured on the records a first reader escalates: that reader and its calibration (db.escalated_
    # calibrations.first_identity); None: on all records, for the reader's own runs (0019)
    escalated_from: Mapped[str | None] = mapped_column(String(300))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Decision(Base):
    """A person's answer for one unsure (or refused) value of a stored row (`formwork review --unsure`,
    then `formwork settle`): the value they confirmed or typed (None: the text has none), who and when,
    beside the value the model read and its state then, which are kept as they were, never overwritten.

    A decision settles the value it was made on: it applies to a record's reading while that reading
    holds the same value (flows.delivered). Decisions are not a random sample (a person saw the rows
    the run was unsure of), so they never feed a calibration: calibrations read audits only.
    """

    __tablename__ = "decisions"

    id: Mapped[int] = mapped_column(primary_key=True)
    record_id: Mapped[int] = mapped_column(ForeignKey("records.id"), index=True)
    schema_name: Mapped[str] = mapped_column(String(100))
    schema_version: Mapped[int] = mapped_column(Integer)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))  # the run whose reading the person saw
    field: Mapped[str] = mapped_column(String(200))  # a top-level field of the schema
    action: Mapped[str] = mapped_column(String(10))  # accept, fix, none
    value: Mapped[Any] = mapped_column(JSON(none_as_null=True), nullable=True)  # the person's
    # what the model read, and its state then, as they were
    model_value: Mapped[Any] = mapped_column(JSON(none_as_null=True), nullable=True)
    model_state: Mapped[str] = mapped_column(String(12))  # unsure, refused, none (flows.delivered)
    who: Mapped[str] = mapped_column(String(100))
    decided_at: Mapped[datetime] = mapped_column(default=utcnow)


class AuditLook(Base):
    """One look of `formwork audit calibrate` at the audited records of one population (a calibration
    key, `key_hash` its digest, in this database): the look's number and the error level it spent of the
    budget all looks share (tasks.evaluation.audit.look_level), the audited records' hash and the target
    tested. Stored, so looks after a restart spend on from the same budget (db.audits.next_look)."""

    __tablename__ = "audit_looks"
    __table_args__ = (UniqueConstraint("key_hash", "look"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    look: Mapped[int] = mapped_column(Integer)
    spent: Mapped[float] = mapped_column(Float)  # this look's error level
    budget: Mapped[float] = mapped_column(Float)  # what all looks of the key share
    target: Mapped[float] = mapped_column(Float)
    gold_hash: Mapped[str] = mapped_column(String(64))  # the audited records and answers it tested
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))  # the first audited run of the look
    looked_at: Mapped[datetime] = mapped_column(default=utcnow)
