"""results.evidence and run_results.evidence: where the source text backs each value (tasks.grounding)

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("results", "run_results"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("evidence", sa.JSON(), nullable=True))


def downgrade() -> None:
    for table in ("results", "run_results"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("evidence")
