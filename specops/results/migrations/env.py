"""Alembic environment: runs on the connection ResultsStore hands over, never on a URL of its own.

specops calls alembic in code (`specops.results.database.migrate`), inside a transaction it already
holds (with PostgreSQL's advisory lock), so this file only configures the context on that
connection. Batch mode lets the same revision scripts alter tables on SQLite, which has no
ALTER for most changes (alembic copies and swaps the table instead).
"""
from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "specops' results migrations run through specops.results.database.migrate(engine), "
        "which passes its connection; they have no URL of their own"
    )

context.configure(
    connection=connection,
    target_metadata=None,  # revisions are written by hand: each is a frozen snapshot, not the live Table
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
