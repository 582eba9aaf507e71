"""On PostgreSQL, an index of each script's keyword terms, so a search asks at once whether a store holds both

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The searcher crosses the languages only where a store holds words of both scripts
# (`search.pg_keywords.bilingual`); without these, asking scans every term of a store in one
# language. Partial indexes on the term alone: a term's counts change on every write, its text never,
# so updates of `fts_terms` stay heap-only. The predicates are `pg_keywords`' `HAN_TERM` and
# `LATIN_TERM`, written out: a migration stays as it was written.
_INDEXES = {
    "ix_fts_terms_han": r"term ~ '[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]'",
    "ix_fts_terms_latin": "term ~ '^[A-Za-z]+$'",
}


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name, predicate in _INDEXES.items():
            op.execute(f"CREATE INDEX IF NOT EXISTS {name} ON fts_terms (agent_id, kind, view) WHERE {predicate}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name in _INDEXES:
            op.execute(f"DROP INDEX IF EXISTS {name}")
