"""retry_queue.kind and escalate_to: a row held back only by its values' thresholds waits for a
stronger reader, not for the same one again

The same model, greedy, answers the same; asked again, its unsure rows walked to the dead letter. An
entry now says what it waits for: `retry` (the same reader: a refusal a retry may fix, an engine
error) or `escalation` (the reader `escalate_to` names). Older entries are retries.

Revision ID: 0013_escalation
Revises: 0012_calibration_source
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_escalation"
down_revision = "0012_calibration_source"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("retry_queue") as batch_op:
        batch_op.add_column(sa.Column("kind", sa.String(12), nullable=False, server_default="retry"))
        batch_op.add_column(sa.Column("escalate_to", sa.String(300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("retry_queue") as batch_op:
        batch_op.drop_column("escalate_to")
        batch_op.drop_column("kind")
