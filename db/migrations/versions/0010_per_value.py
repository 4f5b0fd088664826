"""the guarantee per value: each row's readings and decisions, per-field calibrations, a fuller key

A row now keeps, per value, what each reading said and what was decided (`trust`), and a calibration
holds a score model and one threshold per field (`fields`, `score_model`) instead of one threshold
for the row. Its key also names how both passes sample and the pipeline's version; those are NULL
on older rows, and a NULL never matches: older calibrations no longer apply (a run says so).

Revision ID: 0010_per_value
Revises: 0009_calibration_key
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_per_value"
down_revision = "0009_calibration_key"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.add_column(sa.Column("sampling", sa.String(16), nullable=True))
        batch_op.add_column(sa.Column("pipeline", sa.String(40), nullable=True))
        batch_op.add_column(sa.Column("fields", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("score_model", sa.JSON(), nullable=True))
    for table in ("results", "run_results"):
        with op.batch_alter_table(table) as batch_op:
            batch_op.add_column(sa.Column("trust", sa.JSON(), nullable=True))


def downgrade() -> None:
    for table in ("run_results", "results"):
        with op.batch_alter_table(table) as batch_op:
            batch_op.drop_column("trust")
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.drop_column("score_model")
        batch_op.drop_column("fields")
        batch_op.drop_column("pipeline")
        batch_op.drop_column("sampling")
