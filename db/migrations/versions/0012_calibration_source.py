"""where a calibration's gold came from: a gold set, or a person's audit of a run's own records

A calibration made from `formwork audit calibrate` was measured on the user's own records, and a run
that applies it says so ("calibrated on 50 of your own records on DATE"). NULL on older rows: a gold
set, as every calibration before audits was.

Revision ID: 0012_calibration_source
Revises: 0011_run_worker
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_calibration_source"
down_revision = "0011_run_worker"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.add_column(sa.Column("source", sa.String(20), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.drop_column("source")
