"""reader setup: results keyed by the model and mode that read them, so another reader reads again

A second `formwork run` with another model or mode on the same database said "nothing to do": a
record's result was keyed by record and schema version only. Runs now store their reader as NAME@MODE
(`runs.setup`), results carry it, and the unique key of `results` takes it: each reader keeps its own
row, and a record is done for a reader only once that reader has read it.

Existing runs get the setup their calibration key recorded (its model, named as the catalogue names it
where the file's sha256 is a catalogue model's, and its mode), and existing results their run's: a
later run with that same reader finds them done, as before. A run that recorded no key (calibrations
off) left no mode, so its results keep an empty setup, which no new run has: its records are read once
more by the next run, under a setup that is then known.

Revision ID: 0017_reader_setup
Revises: 0016_audit_looks
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0017_reader_setup"
down_revision = "0016_audit_looks"
branch_labels = None
depends_on = None

# the catalogue's models as they stood at this migration (tasks.engines.models): file sha256 -> name
NAMES = {
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53": "smollm2-135m",
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046": "qwen2.5-coder-1.5b",
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32": "qwen2.5-coder-0.5b",
}
OLD_KEY = ["record_id", "schema_name", "schema_version"]


def _setup(confidence: object) -> str | None:
    """NAME@MODE from a run's stored confidence (its calibration key), or None where it holds no key."""
    if isinstance(confidence, str):  # JSON comes back as text from some drivers
        confidence = json.loads(confidence)
    key = (confidence or {}).get("key") if isinstance(confidence, dict) else None
    if not key or not key.get("mode"):
        return None
    name = NAMES.get(key.get("model_hash") or "", key.get("model") or "")
    return f"{name}@{key['mode']}"


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch_op:
        batch_op.add_column(sa.Column("setup", sa.String(length=300), nullable=True))
    with op.batch_alter_table("results") as batch_op:
        batch_op.add_column(sa.Column("setup", sa.String(length=300), server_default="", nullable=False))
    runs = sa.table("runs", sa.column("id", sa.Integer), sa.column("confidence", sa.JSON),
                    sa.column("setup", sa.String))  # fmt: skip
    results = sa.table("results", sa.column("run_id", sa.Integer), sa.column("setup", sa.String))
    connection = op.get_bind()
    for run_id, confidence in connection.execute(sa.select(runs.c.id, runs.c.confidence)).all():
        setup = _setup(confidence)
        if setup is not None:
            connection.execute(runs.update().where(runs.c.id == run_id).values(setup=setup))
            connection.execute(results.update().where(results.c.run_id == run_id).values(setup=setup))
    with op.batch_alter_table("results") as batch_op:
        batch_op.drop_constraint("uq_results_record_id", type_="unique")
        batch_op.create_unique_constraint("uq_results_record_id", [*OLD_KEY, "setup"])


def downgrade() -> None:
    """Back to one row per record and schema version: the most recently updated reader's row stays."""
    results = sa.table("results", sa.column("id", sa.Integer), sa.column("record_id", sa.Integer),
                       sa.column("schema_name", sa.String), sa.column("schema_version", sa.Integer),
                       sa.column("updated_at", sa.DateTime))  # fmt: skip
    newer = sa.alias(results, "newer")
    superseded = sa.exists().where(
        newer.c.record_id == results.c.record_id, newer.c.schema_name == results.c.schema_name,
        newer.c.schema_version == results.c.schema_version,
        sa.or_(newer.c.updated_at > results.c.updated_at,
               sa.and_(newer.c.updated_at == results.c.updated_at, newer.c.id > results.c.id)),
    )  # fmt: skip
    op.execute(results.delete().where(superseded))
    with op.batch_alter_table("results") as batch_op:
        batch_op.drop_constraint("uq_results_record_id", type_="unique")
        batch_op.create_unique_constraint("uq_results_record_id", OLD_KEY)
        batch_op.drop_column("setup")
    with op.batch_alter_table("runs") as batch_op:
        batch_op.drop_column("setup")
