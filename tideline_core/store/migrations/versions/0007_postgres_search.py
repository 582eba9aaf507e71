"""PostgreSQL search in the database: jieba tsvectors with BM25 statistics, pgvector halfvec columns with HNSW

Nothing changes on SQLite (its FTS5 tables and the in-memory indexes stay). On PostgreSQL: the
keyword columns (`fts_kw`, and `fts_ctx` for turns) with GIN indexes, `fts_terms` (document
frequencies and totals), an index for a session's turns in conversation order, and, when the
server has pgvector, `embeddings.vec halfvec(384)` with one HNSW index per view (existing vectors
copied in, `store.pg_vectors.ensure`). Rows are keyword-indexed by the searcher's catch-up
(`store.pg_terms`), or all at once by `tideline db upgrade`.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

import logging

from alembic import op
from sqlalchemy.exc import DBAPIError

from tideline_core.store import agent_indexes, pg_vectors

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None
log = logging.getLogger(__name__)


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    for table, columns in (("narratives", ("fts_kw",)), ("context_turns", ("fts_kw", "fts_ctx"))):
        for column in columns:
            op.execute(f"ALTER TABLE {table} ADD COLUMN {column} tsvector, ADD COLUMN {column}_len integer")
            op.execute(f"CREATE INDEX ix_{table}_{column} ON {table} USING gin ({column})")
        # What the catch-up has yet to index: a small index, read before every PostgreSQL search.
        op.execute(f"CREATE INDEX ix_{table}_fts_pending ON {table} (agent_id, id) WHERE fts_kw IS NULL")
    op.execute("CREATE INDEX ix_context_turns_fts_order ON context_turns (agent_id, session_id, created_at, id)")
    op.execute(
        "CREATE TABLE fts_terms (agent_id varchar(128) NOT NULL, kind varchar(16) NOT NULL, view varchar(16) NOT NULL, "
        "term text NOT NULL, rows bigint NOT NULL DEFAULT 0, tokens bigint NOT NULL DEFAULT 0, "
        "CONSTRAINT pk_fts_terms PRIMARY KEY (agent_id, kind, view, term))"
    )
    try:
        with conn.begin_nested():  # a server without pgvector, or a role that may not create it: keep the rest
            if not pg_vectors.ensure(conn):
                log.warning(
                    "pgvector is not installed on this PostgreSQL server: Tideline will not start on this "
                    "database until it is (install it, then run `tideline db upgrade`)"
                )
    except DBAPIError as exc:
        log.warning("pgvector could not be set up (%s): Tideline will not start on this database until it is", exc.orig)


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    agent_indexes.drop_all(conn)
    op.execute("ALTER TABLE embeddings DROP COLUMN IF EXISTS vec")
    op.execute("DROP TABLE fts_terms")
    op.execute("DROP INDEX ix_context_turns_fts_order")
    op.execute("DROP INDEX ix_narratives_fts_pending")
    op.execute("DROP INDEX ix_context_turns_fts_pending")
    for table, columns in (("narratives", ("fts_kw",)), ("context_turns", ("fts_kw", "fts_ctx"))):
        for column in columns:
            op.execute(f"ALTER TABLE {table} DROP COLUMN {column}, DROP COLUMN {column}_len")
