"""Alembic environment: migrations run on the Engine handed over by `tideline_core.store.database.migrate`."""

from alembic import context

from tideline_core.store.schema import Base

engine = context.config.attributes["engine"]
with engine.begin() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    context.run_migrations()
