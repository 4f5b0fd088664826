"""escalated calibration: a calibration measured on the records a first reader's rule escalates

A stronger reader's calibration measured on all records overstates its precision on the records a first
reader leaves unsure (issue 52, point 4), so `formwork eval --calibrate --escalated-from RUN` measures one
on those records alone. It holds only for escalations from that first reader under that calibration:
`escalated_from` names both (db.escalated_calibrations.first_identity). NULL, every calibration before
this one and every ordinary one, applies to a reader's own runs and never certifies an escalated value.

Revision ID: 0019_escalated_calibration
Revises: 0018_queue_reader
"""

import sqlalchemy as sa
from alembic import op

revision = "0019_escalated_calibration"
down_revision = "0018_queue_reader"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.add_column(sa.Column("escalated_from", sa.String(length=300), nullable=True))


def downgrade() -> None:
    """Back to calibrations of a reader's own runs: one measured on escalated records would then apply to
    every run of its reader, which it does not speak for, so it is deleted."""
    calibrations = sa.table("calibrations", sa.column("escalated_from"))
    op.execute(calibrations.delete().where(calibrations.c.escalated_from.is_not(None)))
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.drop_column("escalated_from")
