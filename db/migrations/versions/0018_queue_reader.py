"""queue reader: retry-queue entries belong to the reader (NAME@MODE) whose run queued them

Results are kept per reader since 0017, but the retry queue was keyed by record and schema version only:
when another reader read a record fine, the entry the first reader's failure queued was removed, and a
retry was read by whatever reader the worker had. Entries now carry the reader's setup (`runs.setup`)
and their unique key takes it: each reader keeps its own entry, settled only by its own success.

Existing entries get the setup of their record's latest result row for that schema version (the row the
failure that queued them stored), or "" where there is none: such an entry is read, as before, with the
worker's own reader.

Revision ID: 0018_queue_reader
Revises: 0017_reader_setup
"""

import sqlalchemy as sa
from alembic import op

revision = "0018_queue_reader"
down_revision = "0017_reader_setup"
branch_labels = None
depends_on = None

OLD_KEY = ["record_id", "schema_name", "schema_version"]


def upgrade() -> None:
    with op.batch_alter_table("retry_queue") as batch_op:
        batch_op.add_column(sa.Column("setup", sa.String(length=300), server_default="", nullable=False))
    queue = sa.table("retry_queue", *(sa.column(c) for c in [*OLD_KEY, "setup"]))
    results = sa.table("results", *(sa.column(c) for c in [*OLD_KEY, "setup", "updated_at", "id"]))
    latest = (
        sa.select(results.c.setup)
        .where(*(results.c[c] == queue.c[c] for c in OLD_KEY))
        .order_by(results.c.updated_at.desc(), results.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    op.execute(queue.update().values(setup=sa.func.coalesce(latest, "")))
    with op.batch_alter_table("retry_queue") as batch_op:
        batch_op.drop_constraint("uq_retry_queue_record_id", type_="unique")
        batch_op.create_unique_constraint("uq_retry_queue_record_id", [*OLD_KEY, "setup"])


def downgrade() -> None:
    """Back to one entry per record and schema version: the most recently updated reader's entry stays."""
    queue = sa.table("retry_queue", *(sa.column(c) for c in [*OLD_KEY, "updated_at", "id"]))
    newer = sa.alias(queue, "newer")
    superseded = sa.exists().where(
        *(newer.c[c] == queue.c[c] for c in OLD_KEY),
        sa.or_(newer.c.updated_at > queue.c.updated_at,
               sa.and_(newer.c.updated_at == queue.c.updated_at, newer.c.id > queue.c.id)),
    )  # fmt: skip
    op.execute(queue.delete().where(superseded))
    with op.batch_alter_table("retry_queue") as batch_op:
        batch_op.drop_constraint("uq_retry_queue_record_id", type_="unique")
        batch_op.create_unique_constraint("uq_retry_queue_record_id", OLD_KEY)
        batch_op.drop_column("setup")
