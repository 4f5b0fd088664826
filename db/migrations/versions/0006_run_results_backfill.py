"""run_results backfill: what each run from before 0002 produced, so `results --run N` shows it

Revision ID: 0006_run_results_backfill
Revises: 0005

Migration 0002 created `run_results` empty, so a run made by an older version showed no results in
`results --run N` and in its review page. Its answers are still in `results` (one per record and
schema version, with the run that wrote them): each one that has no history row for its run gets one.
Rows a newer version wrote are never touched, so the upgrade is safe to run on any database.
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_run_results_backfill"
down_revision = "0005"
branch_labels = None
depends_on = None

COPIED = ["run_id", "record_id", "status", "data", "errors", "nulled", "reasoning_finish",
          "formatting_finish", "attempts", "evidence"]  # fmt: skip


def upgrade() -> None:
    columns = [sa.column(name) for name in [*COPIED, "updated_at"]]
    results = sa.table("results", *columns)
    history = sa.table("run_results", *[sa.column(name) for name in [*COPIED, "created_at"]])
    missing = ~sa.exists().where(
        history.c.run_id == results.c.run_id, history.c.record_id == results.c.record_id
    )
    rows = sa.select(*[results.c[name] for name in COPIED], results.c.updated_at).where(missing)
    op.execute(history.insert().from_select([*COPIED, "created_at"], rows))


def downgrade() -> None:
    """Nothing to undo: the copied rows are true history, indistinguishable from those runs wrote."""
