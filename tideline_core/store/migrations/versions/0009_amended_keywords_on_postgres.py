"""On PostgreSQL, memories whose keyword row was indexed before their amendment counted: indexed again with it

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # 0008 re-indexed SQLite's full-text rows; PostgreSQL's keyword rows are written by the searcher's
    # catch-up, which reads amendments since 0008. A row it indexed before that holds no note: taken out
    # of the BM25 statistics and left for the next catch-up (a search, or the embed task), as an
    # amendment does now. A row indexed with its notes since is indexed again the same: harmless.
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    from tideline_core.search.pg_keywords import index_again

    stale = conn.execute(
        sa.text(
            "SELECT n.id FROM narratives n WHERE n.fts_kw IS NOT NULL"
            " AND EXISTS (SELECT 1 FROM amendments a WHERE a.narrative_id = n.id) ORDER BY n.id FOR UPDATE"
        )
    ).all()
    index_again(conn, [int(row.id) for row in stale])


def downgrade() -> None:
    pass  # the notes stay searchable: nothing to undo
