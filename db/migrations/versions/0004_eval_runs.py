"""eval runs: each mode scored on a gold set, linked to the run whose rows were scored; the parsing
ladder's step stored with each model call

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("model_calls") as batch_op:
        batch_op.add_column(sa.Column("parse_step", sa.String(length=20), nullable=True))
    op.create_table(
        "eval_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("batch", sa.String(length=40), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("gold_source", sa.String(length=500), nullable=False),
        sa.Column("schema_name", sa.String(length=100), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("mode", sa.String(length=30), nullable=False),
        sa.Column("records", sa.Integer(), nullable=False),
        sa.Column("scores", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_eval_runs_run_id_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_runs")),
    )
    with op.batch_alter_table("eval_runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_eval_runs_batch"), ["batch"], unique=False)
        batch_op.create_index(batch_op.f("ix_eval_runs_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("model_calls") as batch_op:
        batch_op.drop_column("parse_step")
    with op.batch_alter_table("eval_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_eval_runs_run_id"))
        batch_op.drop_index(batch_op.f("ix_eval_runs_batch"))
    op.drop_table("eval_runs")
