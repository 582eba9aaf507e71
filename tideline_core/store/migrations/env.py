"""Alembic environment: migrations run on the Engine handed over by `tideline_core.store.database.migrate`.

Every process migrates at start (the server, each worker, beat, the CLI), and several may start at
once on a fresh database. The whole upgrade therefore runs in one transaction that first takes a
lock only one process holds at a time: the others wait, then find the schema at head and do nothing.
"""

from alembic import context

from tideline_core.store.schema import Base

# Any fixed 64-bit number names the lock; this one spells nothing in particular.
MIGRATION_LOCK = 7_362_801_524_913_001

engine = context.config.attributes["engine"]
with engine.connect() as connection:
    # SQLite: BEGIN IMMEDIATE (the engine's write transaction) takes the database's write lock up
    # front, and a second process waits for it (busy timeout) instead of failing halfway.
    connection.info["write"] = True
    with connection.begin():
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
        context.run_migrations()
