"""watermarks: how far each SQL source has been read per schema version (tasks.sql_source)

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "watermarks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=500), nullable=False),
        sa.Column("selection", sa.String(length=300), nullable=False),
        sa.Column("schema_name", sa.String(length=100), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_watermarks_run_id_runs"),
        sa.PrimaryKeyConstraint("id", name="pk_watermarks"),
        sa.UniqueConstraint(
            "source", "selection", "schema_name", "schema_version", name="uq_watermarks_source"
        ),
    )


def downgrade() -> None:
    op.drop_table("watermarks")
