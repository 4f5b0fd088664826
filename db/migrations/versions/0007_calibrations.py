"""calibrations: confidence thresholds chosen on gold data with the bound they reached; each run's
applied confidence bounds

Revision ID: 0007_calibrations
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_calibrations"
down_revision = "0006_run_results_backfill"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch_op:
        batch_op.add_column(sa.Column("confidence", sa.JSON(none_as_null=True), nullable=True))
    op.create_table(
        "calibrations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("schema_name", sa.String(length=100), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("schema_hash", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("engine", sa.String(length=40), nullable=False),
        sa.Column("mode", sa.String(length=30), nullable=False),
        sa.Column("method", sa.String(length=40), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("target", sa.Float(), nullable=False),
        sa.Column("level", sa.Float(), nullable=False),
        sa.Column("bound", sa.Float(), nullable=False),
        sa.Column("kept", sa.Integer(), nullable=False),
        sa.Column("correct", sa.Integer(), nullable=False),
        sa.Column("gold_hash", sa.String(length=64), nullable=False),
        sa.Column("gold_size", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_calibrations_run_id_runs"),
        sa.PrimaryKeyConstraint("id", name="pk_calibrations"),
    )
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.create_index("ix_calibrations_schema_hash", ["schema_hash"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.drop_index("ix_calibrations_schema_hash")
    op.drop_table("calibrations")
    with op.batch_alter_table("runs") as batch_op:
        batch_op.drop_column("confidence")
