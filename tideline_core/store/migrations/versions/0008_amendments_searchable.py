"""Memories amended before amendments were part of their text: embedded again with their notes, and on SQLite
indexed again by keyword

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The write path does this for each amendment from now on; here, once, for the memories amended before it
    # did: their notes searchable by meaning once re-embedded, and by keyword in SQLite's full-text index.
    # PostgreSQL's keyword rows belong to the searcher, above the store, which a migration does not reach.
    from tideline_core.domain.memory_text import narrative_search_text
    from tideline_core.store import fts
    from tideline_core.store.narratives import load_narratives

    conn = op.get_bind()
    amended = conn.execute(
        sa.text(
            "SELECT DISTINCT n.agent_id, n.id FROM narratives n"
            " JOIN amendments a ON a.narrative_id = n.id ORDER BY n.id"
        )
    ).all()
    by_agent: dict[str, list[int]] = {}
    for agent_id, narrative_id in amended:
        by_agent.setdefault(agent_id, []).append(int(narrative_id))
    for agent_id, ids in by_agent.items():
        records = load_narratives(conn, agent_id, ids)
        fts.reindex(
            conn, "narrative", [(r.id, agent_id, narrative_search_text(r, r.amendments)) for r in records.values()]
        )
        conn.execute(
            sa.text("UPDATE narratives SET embedding_state = 'pending' WHERE id IN :ids").bindparams(
                sa.bindparam("ids", expanding=True)
            ),
            {"ids": ids},
        )


def downgrade() -> None:
    pass  # the notes stay searchable: nothing to undo
