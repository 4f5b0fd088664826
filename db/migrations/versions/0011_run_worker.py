"""runs.worker: the retry-queue worker a reprocessing run claimed its entries as

A `formwork retry` killed outright left its queue entries `claimed` for `claim_timeout_s` (30
minutes) although the next run marked it crashed a minute later: nothing tied the run to its claims.
With the worker's name on the run, marking it crashed puts its claims back. NULL for a batch run, and
for runs from before this revision.

Revision ID: 0011_run_worker
Revises: 0010_per_value
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_run_worker"
down_revision = "0010_per_value"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch_op:
        batch_op.add_column(sa.Column("worker", sa.String(100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch_op:
        batch_op.drop_column("worker")
