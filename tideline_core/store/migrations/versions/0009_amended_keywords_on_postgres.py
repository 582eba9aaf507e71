"""On PostgreSQL, memories whose keyword row was written before their amendment counted: indexed again with it

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# One statement, so the rows it reads are the rows it takes out: each stale row leaves the BM25
# statistics (its distinct terms' document counts, and the view's row and token totals under the
# empty term) and its keyword row is cleared, so the next catch-up (a search, or the embed task)
# indexes it again with its notes. Plain SQL: a migration belongs to the store and must not call the
# searcher that writes these rows.
_INDEX_AGAIN = """
WITH stale AS (
    SELECT n.id, n.agent_id, n.fts_kw, coalesce(n.fts_kw_len, 0) AS n_tokens FROM narratives n
    WHERE n.fts_kw IS NOT NULL AND EXISTS (SELECT 1 FROM amendments a WHERE a.narrative_id = n.id)
    FOR UPDATE OF n
), delta AS (
    SELECT agent_id, term, count(*) AS n_rows, 0 AS n_tokens
    FROM stale, unnest(tsvector_to_array(stale.fts_kw)) AS term GROUP BY agent_id, term
    UNION ALL
    SELECT agent_id, '' AS term, count(*) AS n_rows, sum(n_tokens) AS n_tokens FROM stale GROUP BY agent_id
), forgotten AS (
    UPDATE fts_terms f SET rows = f.rows - d.n_rows, tokens = f.tokens - d.n_tokens FROM delta d
    WHERE f.agent_id = d.agent_id AND f.kind = 'narrative' AND f.view = 'kw' AND f.term = d.term
    RETURNING 1
)
UPDATE narratives SET fts_kw = NULL, fts_kw_len = NULL WHERE id IN (SELECT id FROM stale)
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_INDEX_AGAIN)


def downgrade() -> None:
    pass  # the notes stay searchable: nothing to undo
