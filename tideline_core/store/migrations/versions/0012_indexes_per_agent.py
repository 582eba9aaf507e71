"""Indexes per agent: the HNSW graphs and GIN keyword indexes every agent shared are dropped

Each agent's view of at least `agent_indexes.OWN_ROWS` rows gets indexes of its own, built without
blocking writes by `tideline db upgrade` and the periodic `tideline.dream.build_agent_indexes` task
(not here: a migration runs when any process starts, and a large graph takes minutes); until then
its searches read its rows. Nothing changes on SQLite.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

from alembic import op

from tideline_core.store import agent_indexes, pg_vectors

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in agent_indexes.SHARED:
        op.execute(f"DROP INDEX IF EXISTS {name}")


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    pg_vectors.forget(conn.engine)
    agent_indexes.restore_shared(conn, vectors=pg_vectors.enabled(conn))
