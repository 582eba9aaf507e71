"""Reading what a provider stored straight from the database: the turns of an agent, and whether all are embedded."""

from __future__ import annotations

from sqlalchemy import select

from tideline_core.store.database import Database
from tideline_core.store.schema import ContextTurn
from tideline_core.store.status import counts


def turns_of(db: Database, agent: str) -> list[tuple[str, str, str]]:
    """The agent's context turns as (session, role, content), in the order stored."""
    with db.read() as conn:
        rows = conn.execute(
            select(ContextTurn.session_id, ContextTurn.role, ContextTurn.content)
            .where(ContextTurn.agent_id == agent)
            .order_by(ContextTurn.id)
        ).all()
    return [(s, r, c) for s, r, c in rows]


def all_embedded(db: Database, agent: str) -> bool:
    """Whether a worker has embedded every narrative and context turn of the agent."""
    with db.read() as conn:
        c = counts(conn, agent)
    return c.pending_narratives == 0 and c.pending_context == 0
