"""Alembic environment: migrate the connection Formwork hands over, or the URL in the config."""

from alembic import context
from sqlalchemy import create_engine

from formwork.db.models import Base


def run() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        with create_engine(context.config.get_main_option("sqlalchemy.url")).begin() as owned:
            _migrate(owned)
    else:
        _migrate(connection)


def _migrate(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    context.run_migrations()


run()
