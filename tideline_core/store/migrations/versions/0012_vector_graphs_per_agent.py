"""Vector graphs per agent: the HNSW graphs every agent shared are dropped

Each agent's view of at least `pg_vectors.GRAPH_ROWS` vectors gets a graph of its own, built without
blocking writes by `tideline db upgrade` and the periodic `tideline.dream.build_vector_graphs` task
(not here: a migration runs when any process starts, and a large graph takes minutes); until then
its searches scan its rows exactly. Nothing changes on SQLite or without pgvector's column.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

from alembic import op

from tideline_core.store import pg_vectors

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    pg_vectors.forget(conn.engine)
    if not pg_vectors.enabled(conn):
        return
    for name in pg_vectors.SHARED_GRAPHS:
        op.execute(f"DROP INDEX IF EXISTS {name}")


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    pg_vectors.forget(conn.engine)
    if not pg_vectors.enabled(conn):
        return
    for name in pg_vectors.graphs(conn):
        op.execute(f"DROP INDEX IF EXISTS {name}")
    for (kind, view), name in zip(pg_vectors.VIEWS, pg_vectors.SHARED_GRAPHS, strict=True):
        op.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON embeddings USING hnsw (vec halfvec_cosine_ops) "
            f"WHERE kind = '{kind}' AND view = '{view}'"
        )
