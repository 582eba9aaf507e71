"""How much an agent's memory holds: rows per kind, how many wait for (or failed) their embedding, and since when."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, func, select

from tideline_core.domain.records import AgentCounts
from tideline_core.store.schema import (
    Amendment,
    AttentionHit,
    ContextTurn,
    Narrative,
    Profile,
    SelfConcept,
    Snapshot,
    Thread,
)
from tideline_core.text.dates import as_utc


def _count(conn: Connection, table: Any, agent_id: str, *where: ColumnElement[bool]) -> int:
    query = select(func.count()).select_from(table).where(table.agent_id == agent_id, *where)
    return int(conn.execute(query).scalar_one())


def counts(conn: Connection, agent_id: str) -> AgentCounts:
    """Rows per kind for one agent, and how many still wait for (or failed) their embedding."""
    return AgentCounts(
        narratives=_count(conn, Narrative, agent_id),
        context_turns=_count(conn, ContextTurn, agent_id),
        profiles=_count(conn, Profile, agent_id),
        self_concept=_count(conn, SelfConcept, agent_id),
        threads=_count(conn, Thread, agent_id),
        snapshots=_count(conn, Snapshot, agent_id),
        pending_narratives=_count(conn, Narrative, agent_id, Narrative.embedding_state == "pending"),
        pending_context=_count(conn, ContextTurn, agent_id, ContextTurn.embedding_state == "pending"),
        extra={
            "failed_narratives": _count(conn, Narrative, agent_id, Narrative.embedding_state == "failed"),
            "failed_context": _count(conn, ContextTurn, agent_id, ContextTurn.embedding_state == "failed"),
            "amendments": _count(conn, Amendment, agent_id),
            "attention_hits": _count(conn, AttentionHit, agent_id),
        },
    )


def agents_with_memories(conn: Connection) -> dict[str, int]:
    """Every agent holding narratives or context turns, with how many, the largest first."""
    rows: dict[str, int] = {}
    for table in (Narrative, ContextTurn):
        for agent_id, n in conn.execute(select(table.agent_id, func.count()).group_by(table.agent_id)):
            rows[str(agent_id)] = rows.get(str(agent_id), 0) + int(n)
    return dict(sorted(rows.items(), key=lambda item: (-item[1], item[0])))


def oldest_pending(conn: Connection, agent_id: str) -> datetime | None:
    """When the oldest row still waiting for its embedding was written; None when none waits.

    A turn counts from when it was recorded, not the time it carries (an imported session is old).
    """
    narrative = select(func.min(Narrative.created_at)).where(
        Narrative.agent_id == agent_id, Narrative.embedding_state == "pending"
    )
    turn = select(func.min(ContextTurn.recorded_at)).where(
        ContextTurn.agent_id == agent_id, ContextTurn.embedding_state == "pending"
    )
    found = [as_utc(v) for v in (conn.execute(narrative).scalar_one(), conn.execute(turn).scalar_one()) if v]
    return min(found) if found else None
