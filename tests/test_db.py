"""The database on both backends: migrations build exactly the models' schema, and writes are idempotent."""

from __future__ import annotations

import dataclasses

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, func, inspect, select
from sqlalchemy import types as sqltypes

import formwork.db.store
from formwork.db.models import Base, ModelCall, Record, Result
from formwork.db.queue import queue_counts
from formwork.db.session import alembic_config, get_engine, session_factory
from formwork.db.store import QueuePolicy, records_without_result, save_outcomes, start_run, store_records
from formwork.schemas.registry import load_schema
from formwork.tasks.calls import CallLog, Outcome
from formwork.tasks.sources import InputRecord
from formwork.tasks.validate import Verdict

EXPENSE = load_schema("expense")
EXPENSE_V2 = dataclasses.replace(EXPENSE, version=EXPENSE.version + 1)

# Every table's columns, written out so that a migration cannot drift silently (cf. simonw/llm's
# tests/test_migrate.py). A trailing "?" means nullable. "timestamptz" is DateTime(timezone=True); SQLite
# has no such type and reflects a plain DATETIME, which the normaliser below accepts there only.
EXPECTED_COLUMNS = {
    "records": {
        "id": "int", "source": "str(500)", "key": "str(200)", "text_hash": "str(64)", "text": "text",
        "meta": "json", "problem": "text?", "created_at": "timestamptz",
    },
    "runs": {
        "id": "int", "flow": "str(60)", "source": "str(500)", "schema_name": "str(100)",
        "schema_version": "int", "schema_hash": "str(64)", "schema_body": "json?", "engine": "str(40)",
        "reasoning_model": "str(200)", "formatting_model": "str(200)", "state": "str(20)",
        "confidence": "json?", "started_at": "timestamptz", "heartbeat_at": "timestamptz?",
        "finished_at": "timestamptz?", "worker": "str(100)?", "setup": "str(300)?",
    },
    "model_calls": {
        "id": "int", "run_id": "int", "record_id": "int", "pass_name": "str(20)", "attempt": "int",
        "model": "str(200)", "prompt_hash": "str(32)", "prompt_tokens": "int", "completion_tokens": "int",
        "max_tokens": "int", "finish_reason": "str(20)", "duration_s": "float", "output": "text",
        "error": "text?", "parse_step": "str(20)?", "judged": "json?", "created_at": "timestamptz",
    },
    "results": {
        "id": "int", "record_id": "int", "schema_name": "str(100)", "schema_version": "int", "run_id": "int",
        "text_hash": "str(64)", "schema_hash": "str(64)", "status": "str(10)", "data": "json?",
        "errors": "json", "nulled": "json", "reasoning_finish": "str(20)?", "formatting_finish": "str(20)?",
        "retryable": "bool", "attempts": "int", "updated_at": "timestamptz", "evidence": "json?",
        "trust": "json?", "setup": "str(300)",
    },
    "run_results": {
        "id": "int", "run_id": "int", "record_id": "int", "status": "str(10)", "data": "json?",
        "errors": "json", "nulled": "json", "reasoning_finish": "str(20)?", "formatting_finish": "str(20)?",
        "attempts": "int", "evidence": "json?", "trust": "json?", "created_at": "timestamptz",
    },
    "record_claims": {
        "id": "int", "record_id": "int", "schema_name": "str(100)", "schema_version": "int", "run_id": "int",
        "claimed_at": "timestamptz",
    },
    "retry_queue": {
        "id": "int", "record_id": "int", "schema_name": "str(100)", "schema_version": "int",
        "setup": "str(300)", "schema_source": "str(500)", "schema_hash": "str(64)", "schema_body": "json?",
        "attempts": "int", "last_error": "text",
        "next_attempt_at": "timestamptz", "state": "str(12)", "claimed_by": "str(100)?",
        "claimed_at": "timestamptz?", "updated_at": "timestamptz", "kind": "str(12)",
        "escalate_to": "str(300)?",
    },
    "eval_runs": {
        "id": "int", "batch": "str(40)", "run_id": "int", "gold_source": "str(500)",
        "schema_name": "str(100)", "schema_version": "int", "mode": "str(30)", "records": "int",
        "scores": "json", "created_at": "timestamptz",
    },
    "watermarks": {
        "id": "int", "source": "str(500)", "selection": "str(300)", "schema_name": "str(100)",
        "schema_version": "int", "value": "json", "run_id": "int?", "updated_at": "timestamptz",
    },
    "calibrations": {
        "id": "int", "schema_name": "str(100)", "schema_version": "int", "schema_hash": "str(64)",
        "model": "str(200)", "model_hash": "str(64)?", "reasoning_model": "str(200)?", "grounded": "bool?",
        "engine": "str(40)", "mode": "str(30)", "sampling": "str(16)?", "pipeline": "str(40)?",
        "method": "str(40)", "score_model": "json?", "fields": "json?",
        "threshold": "float?", "target": "float", "level": "float", "bound": "float", "kept": "int",
        "correct": "int", "values_bound": "float?", "values_kept": "int?", "values_correct": "int?",
        "gold_hash": "str(64)", "gold_size": "int", "source": "str(20)?", "escalated_from": "str(300)?",
        "run_id": "int?", "created_at": "timestamptz",
    },
    "decisions": {
        "id": "int", "record_id": "int", "schema_name": "str(100)", "schema_version": "int", "run_id": "int",
        "field": "str(200)", "action": "str(10)", "value": "json?", "model_value": "json?",
        "model_state": "str(12)", "who": "str(100)", "decided_at": "timestamptz",
    },
    "audit_looks": {
        "id": "int", "key_hash": "str(64)", "look": "int", "spent": "float", "budget": "float",
        "target": "float", "gold_hash": "str(64)", "run_id": "int", "looked_at": "timestamptz",
    },
    "alembic_version": {"version_num": "str(32)"},
}  # fmt: skip
# The upserts depend on these unique keys, the queue and the reports on these indexes.
EXPECTED_UNIQUE = {
    "records": {("source", "key", "text_hash")},
    "results": {("record_id", "schema_name", "schema_version", "setup")},  # one row per reader (0017)
    "record_claims": {("record_id", "schema_name", "schema_version")},
    "retry_queue": {("record_id", "schema_name", "schema_version", "setup")},  # one entry per reader (0018)
    "watermarks": {("source", "selection", "schema_name", "schema_version")},
    "audit_looks": {("key_hash", "look")},  # two calibrates at once cannot both take one look
}
EXPECTED_INDEXES = {
    "model_calls": {("record_id",), ("run_id",)},
    "results": {("run_id",), ("schema_hash",), ("status",)},
    "run_results": {("record_id",), ("run_id",)},
    "record_claims": {("run_id",)},
    "retry_queue": {("next_attempt_at",), ("state",)},
    "eval_runs": {("batch",), ("run_id",)},
    "calibrations": {("schema_hash",)},
    "decisions": {("record_id",)},
}
EXPECTED_FOREIGN_KEYS = {
    "model_calls": {("record_id", "records"), ("run_id", "runs")},
    "results": {("record_id", "records"), ("run_id", "runs")},
    "run_results": {("record_id", "records"), ("run_id", "runs")},
    "record_claims": {("record_id", "records"), ("run_id", "runs")},
    "retry_queue": {("record_id", "records")},
    "eval_runs": {("run_id", "runs")},
    "watermarks": {("run_id", "runs")},
    "calibrations": {("run_id", "runs")},
    "decisions": {("record_id", "records"), ("run_id", "runs")},
    "audit_looks": {("run_id", "runs")},
}


def _kind(column: dict, backend: str) -> str:
    kind_of = column["type"]
    if isinstance(kind_of, sqltypes.Boolean):
        kind = "bool"
    elif isinstance(kind_of, sqltypes.JSON):
        kind = "json"
    elif isinstance(kind_of, sqltypes.Text):
        kind = "text"
    elif isinstance(kind_of, sqltypes.String):
        kind = f"str({kind_of.length})"
    elif isinstance(kind_of, sqltypes.Integer):
        kind = "int"
    elif isinstance(kind_of, sqltypes.Float):
        kind = "float"
    elif isinstance(kind_of, sqltypes.DateTime):
        kind = "timestamptz" if kind_of.timezone or backend == "sqlite" else "timestamp"
    else:
        kind = repr(kind_of)
    return kind + ("?" if column["nullable"] else "")


@pytest.fixture
def engine(any_db_url: str) -> Engine:
    return get_engine(any_db_url)  # an empty database, upgraded to head here


def test_migrations_reach_head_and_match_the_models(engine: Engine, any_db_url: str) -> None:
    head = ScriptDirectory.from_config(alembic_config(any_db_url)).get_current_head()
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert context.get_current_revision() == head
        assert compare_metadata(context, Base.metadata) == []


def test_every_table_has_exactly_the_pinned_columns_keys_and_indexes(engine: Engine) -> None:
    inspector = inspect(engine)
    backend = engine.dialect.name
    assert set(inspector.get_table_names()) == set(EXPECTED_COLUMNS)
    for table, expected in EXPECTED_COLUMNS.items():
        found = {column["name"]: _kind(column, backend) for column in inspector.get_columns(table)}
        assert found == expected, table
        assert inspector.get_pk_constraint(table)["constrained_columns"] == (
            ["id"] if table != "alembic_version" else ["version_num"]
        )
        unique = {tuple(u["column_names"]) for u in inspector.get_unique_constraints(table)}
        assert unique == EXPECTED_UNIQUE.get(table, set()), table
        indexes = {tuple(i["column_names"]) for i in inspector.get_indexes(table) if not i.get("unique")}
        assert indexes == EXPECTED_INDEXES.get(table, set()), table
        foreign = {
            (fk["constrained_columns"][0], fk["referred_table"]) for fk in inspector.get_foreign_keys(table)
        }
        assert foreign == EXPECTED_FOREIGN_KEYS.get(table, set()), table


def test_migrations_downgrade_to_nothing_and_upgrade_again(engine: Engine, any_db_url: str) -> None:
    with engine.begin() as connection:
        config = alembic_config(any_db_url)
        config.attributes["connection"] = connection
        command.downgrade(config, "base")
        assert set(inspect(connection).get_table_names()) <= {"alembic_version"}
        command.upgrade(config, "head")
        assert set(inspect(connection).get_table_names()) == set(EXPECTED_COLUMNS)


def _records(n: int, text: str = "text") -> list[InputRecord]:
    return [InputRecord(f"k{i}", f"{text} {i}", {"line": i}) for i in range(n)]


def test_store_records_is_idempotent_per_source_key_and_text(any_db_url: str, monkeypatch) -> None:
    monkeypatch.setattr(formwork.db.store, "BATCH", 3)  # 7 records: three transactions, across batch edges
    with session_factory(any_db_url)() as session:
        first = store_records(session, "a.jsonl", _records(7))
        again = store_records(session, "a.jsonl", _records(7))
        changed = store_records(session, "a.jsonl", _records(7, text="changed"))
        other = store_records(session, "b.jsonl", _records(2))
        assert again == first and len(set(first)) == 7
        assert not set(changed) & set(first) and len(set(changed)) == 7  # a new text is a new record
        assert not set(other) & set(first)
        assert session.scalar(select(func.count()).select_from(Record)) == 16
        stored = session.scalars(select(Record).where(Record.id.in_(first)).order_by(Record.id)).all()
        assert [r.text for r in stored] == [f"text {i}" for i in range(7)]  # never rewritten in place


def _outcome(record_id: int, status: str, attempts: int = 1) -> Outcome:
    data = {"who": "Maria"} if status != "failed" else None
    call = CallLog("formatting", attempts, "fake", "0" * 32, 64, "stop", 10, 5, 0.01, "{}")
    verdict = Verdict(status, data, [] if status == "ok" else ["who: wrong"])  # type: ignore[arg-type]
    return Outcome(
        record_id, verdict, attempts, reasoning_finish="stop", formatting_finish="stop",
        retryable=status == "failed", calls=[call],
    )  # fmt: skip


def test_save_outcomes_upserts_one_result_per_record_and_schema_version(any_db_url: str) -> None:
    with session_factory(any_db_url)() as session:
        ids = store_records(session, "a.jsonl", _records(3))
        fields = dict(flow="test", source="a.jsonl", engine="fake", reasoning_model="m", formatting_model="m")
        run_1 = start_run(session, EXPENSE, **fields)
        save_outcomes(session, run_1, EXPENSE, [_outcome(i, "failed") for i in ids], QueuePolicy())
        assert records_without_result(session, ids, EXPENSE) == []
        assert records_without_result(session, ids, EXPENSE_V2) == ids

        run_2 = start_run(session, EXPENSE, **fields)
        save_outcomes(session, run_2, EXPENSE, [_outcome(i, "ok", attempts=2) for i in ids], QueuePolicy())
        save_outcomes(session, run_2, EXPENSE_V2, [_outcome(ids[0], "partial")], QueuePolicy())

        results = session.scalars(select(Result).order_by(Result.schema_version, Result.record_id)).all()
        assert [(r.record_id, r.schema_version) for r in results] == [
            *((i, EXPENSE.version) for i in ids),
            (ids[0], EXPENSE_V2.version),
        ]
        first = results[: len(ids)]
        assert {(r.status, r.run_id, r.attempts, r.retryable) for r in first} == {("ok", run_2, 2, False)}
        assert all(r.data == {"who": "Maria"} and r.errors == [] for r in first)
        assert results[-1].status == "partial"
        # Every call is a row, however often a record is saved: 3 + 3 + 1.
        assert session.scalar(select(func.count()).select_from(ModelCall)) == 7
        # Whatever the failed save queued, the ok save took back; a partial is not queued by default.
        assert queue_counts(session) == {"waiting": 0, "claimed": 0, "dead": 0}

        # A group of failed retries (an outage) never replaces the kept results.
        run_3 = start_run(session, EXPENSE, **fields)
        save_outcomes(session, run_3, EXPENSE, [_outcome(i, "failed") for i in ids], QueuePolicy())
        session.expire_all()
        kept = session.scalars(select(Result.status).where(Result.schema_version == EXPENSE.version)).all()
        assert kept == ["ok"] * len(ids)
