"""retry_queue.escalate_to without passwords: an escalation server's `user:password@` was stored in clear

An entry now stores its reader's URL redacted (`user:***@`), and the worker that reads it takes the
password from its own settings (flows.run_policy.reader_settings). Entries an older version queued are
redacted the same way here, so no password stays in the queue and they match the worker's settings.

Revision ID: 0014_queue_without_passwords
Revises: 0013_escalation
"""

import re

import sqlalchemy as sa
from alembic import op

revision = "0014_queue_without_passwords"
down_revision = "0013_escalation"
branch_labels = None
depends_on = None

# as tasks.redact does it, kept here so that this migration never changes with the code
_URL_PASSWORD = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s:@]*):(?P<password>[^@\s]+)@"
)


def upgrade() -> None:
    queue = sa.table("retry_queue", sa.column("id"), sa.column("escalate_to"))
    connection = op.get_bind()
    rows = connection.execute(
        sa.select(queue.c.id, queue.c.escalate_to).where(queue.c.escalate_to.like("%://%@%"))
    ).all()
    for entry_id, spec in rows:
        redacted = _URL_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:***@", spec)
        if redacted != spec:
            connection.execute(sa.update(queue).where(queue.c.id == entry_id).values(escalate_to=redacted))


def downgrade() -> None:
    """The passwords are gone: nothing to put back."""
