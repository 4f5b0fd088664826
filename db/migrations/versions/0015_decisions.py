"""decisions: a person's answer for each unsure value of a row, beside the model's reading

`formwork review --unsure` shows the values a run was unsure of, and `formwork settle` stores what a
person answered (accept, fix, none) with who and when, next to the value the model read and its state,
which stay as they were (db.models.Decision).

Revision ID: 0015_decisions
Revises: 0014_queue_without_passwords
"""

import sqlalchemy as sa
from alembic import op

revision = "0015_decisions"
down_revision = "0014_queue_without_passwords"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("record_id", sa.Integer(), nullable=False),
        sa.Column("schema_name", sa.String(length=100), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("field", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=10), nullable=False),
        sa.Column("value", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("model_value", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("model_state", sa.String(length=12), nullable=False),
        sa.Column("who", sa.String(length=100), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["record_id"], ["records.id"], name=op.f("fk_decisions_record_id_records")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_decisions_run_id_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_decisions")),
    )
    with op.batch_alter_table("decisions") as batch_op:
        batch_op.create_index(batch_op.f("ix_decisions_record_id"), ["record_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("decisions") as batch_op:
        batch_op.drop_index(batch_op.f("ix_decisions_record_id"))
    op.drop_table("decisions")
