"""Alembic environment: always run with a connection handed in by :func:`upgrade`."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from steward.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        # Several processes may start at once against one database: migrate one at a time.
        connection.execute(text("SELECT pg_advisory_xact_lock(741100)"))
    context.run_migrations()
