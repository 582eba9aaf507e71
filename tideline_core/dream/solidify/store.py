"""The solidify stage's store reads: a session's turns, the sessions still without a digest, and earlier digests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select

from tideline_core.dream.scan.scanner import TurnRow
from tideline_core.dream.scan.store import select_turn_rows
from tideline_core.store.schema import ContextTurn, Narrative, NarrativeSource
from tideline_core.text.dates import as_utc

DIGEST = "digest"
MAX_CATCH_UP = 20  # sessions left without a digest (a run's budget ran out) digested by the next run, at most


def session_turns(conn: Any, agent_id: str, session_id: str, limit: int) -> list[TurnRow]:
    """The session's newest `limit` turns, in the order they were said."""
    rows = conn.execute(
        select_turn_rows()
        .where(ContextTurn.agent_id == agent_id, ContextTurn.session_id == session_id)
        .order_by(ContextTurn.id.desc())
        .limit(limit)
    ).all()
    return sorted(
        (TurnRow(r.id, r.session_id, r.role, r.speaker, r.content, r.created_at) for r in rows),
        key=lambda t: (as_utc(t.created_at), t.id),
    )


def undigested_sessions(conn: Any, agent_id: str, watermark: int, limit: int = MAX_CATCH_UP) -> list[str]:
    """Sessions solidified before (turns up to the watermark) whose newest such turn no current digest
    links to: a run whose budget ran out after their chunks left them without one. The next run digests them."""
    if watermark <= 0:
        return []
    newest = (
        select(ContextTurn.session_id, func.max(ContextTurn.id).label("last"))
        .where(ContextTurn.agent_id == agent_id, ContextTurn.id <= watermark)
        .group_by(ContextTurn.session_id)
        .subquery()
    )
    digested = (
        select(NarrativeSource.context_id)
        .join(Narrative, Narrative.id == NarrativeSource.narrative_id)
        .where(
            NarrativeSource.agent_id == agent_id,
            Narrative.narrative_type == DIGEST,
            Narrative.origin != "agent",  # a digest the agent wrote itself is its own memory, not the dream's
            Narrative.superseded_by.is_(None),
        )
    )
    rows = conn.execute(
        select(newest.c.session_id).where(newest.c.last.not_in(digested)).order_by(newest.c.last.desc()).limit(limit)
    )
    return list(rows.scalars())


def earlier_digests(conn: Any, agent_id: str, turn_ids: Sequence[int]) -> list[int]:
    """The dream's digests of this session not yet superseded (found through the turns they link to)."""
    if not turn_ids:
        return []
    linked = select(NarrativeSource.narrative_id).where(
        NarrativeSource.agent_id == agent_id, NarrativeSource.context_id.in_(list(turn_ids)[:500])
    )
    return sorted(
        conn.execute(
            select(Narrative.id).where(
                Narrative.agent_id == agent_id,
                Narrative.narrative_type == DIGEST,
                Narrative.origin != "agent",  # the agent's own digest is never superseded by the dream's
                Narrative.superseded_by.is_(None),
                Narrative.id.in_(linked),
            )
        ).scalars()
    )
