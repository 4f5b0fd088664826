"""calibrations: the bound on the precision of the values partial rows keep at the chosen threshold

A calibration certified precision of ok only; a partial row promises its kept values are good too, so
a threshold now also certifies them (tasks.evaluation.calibration). Older calibrations keep NULL: they
made no claim on kept values, and a run says so.

Revision ID: 0008_calibration_values
Revises: 0007_calibrations
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_calibration_values"
down_revision = "0007_calibrations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.add_column(sa.Column("values_bound", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("values_kept", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("values_correct", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.drop_column("values_correct")
        batch_op.drop_column("values_kept")
        batch_op.drop_column("values_bound")
