"""audit_looks: every `formwork audit calibrate` look at one audit population, and the level it spent

Each calibrate on more audited records of the same key is another test of the same claims; each spends
a share of one error budget (tasks.evaluation.audit.look_level), counted here so a restart does not
start the count again (db.audits.next_look).

Revision ID: 0016_audit_looks
Revises: 0015_decisions
"""

import sqlalchemy as sa
from alembic import op

revision = "0016_audit_looks"
down_revision = "0015_decisions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_looks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("look", sa.Integer(), nullable=False),
        sa.Column("spent", sa.Float(), nullable=False),
        sa.Column("budget", sa.Float(), nullable=False),
        sa.Column("target", sa.Float(), nullable=False),
        sa.Column("gold_hash", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("looked_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_audit_looks_run_id_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_looks")),
        sa.UniqueConstraint("key_hash", "look", name=op.f("uq_audit_looks_key_hash")),
    )


def downgrade() -> None:
    op.drop_table("audit_looks")
