"""calibrations keyed by everything that changes a probability; each formatting attempt's judged values

A calibration matched on schema, model name and engine kind only, so one made in another mode, with
grounded decoding off, behind another reasoning model, or on another file of the same name applied.
The new key columns are NULL on older rows, and a NULL never matches: those calibrations no longer
apply (a run says so). `model_calls.judged` keeps what the judge decided about each formatting
attempt (value, confidence, verdict per field), so a stored row shows why one attempt was kept.

Revision ID: 0009_calibration_key
Revises: 0008_calibration_values
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_calibration_key"
down_revision = "0008_calibration_values"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.add_column(sa.Column("model_hash", sa.String(64), nullable=True))
        batch_op.add_column(sa.Column("reasoning_model", sa.String(200), nullable=True))
        batch_op.add_column(sa.Column("grounded", sa.Boolean(), nullable=True))
    with op.batch_alter_table("model_calls") as batch_op:
        batch_op.add_column(sa.Column("judged", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("model_calls") as batch_op:
        batch_op.drop_column("judged")
    with op.batch_alter_table("calibrations") as batch_op:
        batch_op.drop_column("grounded")
        batch_op.drop_column("reasoning_model")
        batch_op.drop_column("model_hash")
