"""integrity: records keyed by text hash, schema bodies and hashes, run history, record claims, heartbeats

Revision ID: 0002
Revises: 0001

Records become immutable: unique per (source, key, text_hash), so a changed input line is a new record
and can never inherit the old line's result. Existing rows get their hashes computed here.
"""

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _fill_text_hashes() -> None:
    bind = op.get_bind()
    records = sa.table("records", sa.column("id", sa.Integer), sa.column("text", sa.Text),
                       sa.column("text_hash", sa.String))  # fmt: skip
    results = sa.table("results", sa.column("record_id", sa.Integer), sa.column("text_hash", sa.String))
    for record_id, text in bind.execute(sa.select(records.c.id, records.c.text)).all():
        digest = text_digest(text)
        bind.execute(records.update().where(records.c.id == record_id).values(text_hash=digest))
        bind.execute(results.update().where(results.c.record_id == record_id).values(text_hash=digest))


def upgrade() -> None:
    with op.batch_alter_table("records") as batch_op:
        batch_op.add_column(sa.Column("text_hash", sa.String(length=64), nullable=False, server_default=""))
    with op.batch_alter_table("results") as batch_op:
        batch_op.add_column(sa.Column("text_hash", sa.String(length=64), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("schema_hash", sa.String(length=64), nullable=False, server_default=""))
        batch_op.create_index(batch_op.f("ix_results_schema_hash"), ["schema_hash"], unique=False)
    _fill_text_hashes()
    with op.batch_alter_table("records") as batch_op:
        batch_op.drop_constraint("uq_records_source", type_="unique")
        batch_op.create_unique_constraint(batch_op.f("uq_records_source"), ["source", "key", "text_hash"])
    with op.batch_alter_table("runs") as batch_op:
        batch_op.add_column(sa.Column("schema_hash", sa.String(length=64), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("schema_body", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("retry_queue") as batch_op:
        batch_op.add_column(sa.Column("schema_hash", sa.String(length=64), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("schema_body", sa.JSON(), nullable=True))
    op.create_table(
        "run_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("record_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.Column("nulled", sa.JSON(), nullable=False),
        sa.Column("reasoning_finish", sa.String(length=20), nullable=True),
        sa.Column("formatting_finish", sa.String(length=20), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["record_id"], ["records.id"], name=op.f("fk_run_results_record_id_records")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_run_results_run_id_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_results")),
    )
    with op.batch_alter_table("run_results") as batch_op:
        batch_op.create_index(batch_op.f("ix_run_results_record_id"), ["record_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_run_results_run_id"), ["run_id"], unique=False)
    op.create_table(
        "record_claims",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("record_id", sa.Integer(), nullable=False),
        sa.Column("schema_name", sa.String(length=100), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["record_id"], ["records.id"], name=op.f("fk_record_claims_record_id_records")
        ),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_record_claims_run_id_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_record_claims")),
        sa.UniqueConstraint(
            "record_id", "schema_name", "schema_version", name=op.f("uq_record_claims_record_id")
        ),
    )
    with op.batch_alter_table("record_claims") as batch_op:
        batch_op.create_index(batch_op.f("ix_record_claims_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    op.drop_table("record_claims")
    op.drop_table("run_results")
    with op.batch_alter_table("retry_queue") as batch_op:
        batch_op.drop_column("schema_body")
        batch_op.drop_column("schema_hash")
    with op.batch_alter_table("runs") as batch_op:
        batch_op.drop_column("heartbeat_at")
        batch_op.drop_column("schema_body")
        batch_op.drop_column("schema_hash")
    with op.batch_alter_table("records") as batch_op:
        batch_op.drop_constraint("uq_records_source", type_="unique")
        batch_op.create_unique_constraint(batch_op.f("uq_records_source"), ["source", "key"])
        batch_op.drop_column("text_hash")
    with op.batch_alter_table("results") as batch_op:
        batch_op.drop_index(batch_op.f("ix_results_schema_hash"))
        batch_op.drop_column("schema_hash")
        batch_op.drop_column("text_hash")
