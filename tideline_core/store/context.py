"""Raw context turns: record, load, timeline."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, func, insert, or_, select

from tideline_core.inputs import ContextTurnIn
from tideline_core.records import ContextTurnRecord
from tideline_core.schema import ContextTurn
from tideline_core.search import keyword
from tideline_core.store.lookup import owned_rows
from tideline_core.text import index_text
from tideline_core.timeutil import utcnow


def turn_text(speaker: str, content: str) -> str:
    """How a turn reads to the embedder and the keyword index: `speaker: content`."""
    return f"{speaker}: {content}" if speaker else content


def preceding_window(conn: Connection, ids: Sequence[int], before: int = 2) -> dict[int, str]:
    """Each turn's text with up to `before` turns preceding it in its session, joined by newlines.

    Order is (created_at, id), the conversation order. Only earlier turns are used so the text is
    fixed once the turn is written and its vector never has to be recomputed.
    """
    if not ids:
        return {}
    rows = conn.execute(
        select(
            ContextTurn.id,
            ContextTurn.agent_id,
            ContextTurn.session_id,
            ContextTurn.speaker,
            ContextTurn.content,
            ContextTurn.created_at,
        ).where(ContextTurn.id.in_(list(ids)))
    ).all()
    out: dict[int, str] = {}
    for r in rows:
        earlier = conn.execute(
            select(ContextTurn.speaker, ContextTurn.content)
            .where(
                ContextTurn.agent_id == r.agent_id,
                ContextTurn.session_id == r.session_id,
                or_(
                    ContextTurn.created_at < r.created_at,
                    and_(ContextTurn.created_at == r.created_at, ContextTurn.id < r.id),
                ),
            )
            .order_by(ContextTurn.created_at.desc(), ContextTurn.id.desc())
            .limit(before)
        ).all()
        parts = [turn_text(e.speaker, e.content) for e in reversed(earlier)] if before > 0 else []
        out[r.id] = "\n".join([*parts, turn_text(r.speaker, r.content)])
    return out


def insert_turns(conn: Connection, agent_id: str, turns: Sequence[ContextTurnIn]) -> list[int]:
    """Insert validated turns (embedding pending) and index their text; returns the new ids in order."""
    now = utcnow()
    ids: list[int] = []
    for turn in turns:
        speaker = turn.speaker or turn.role
        turn_id = conn.execute(
            insert(ContextTurn)
            .values(
                agent_id=agent_id,
                session_id=turn.session_id,
                role=turn.role,
                speaker=speaker,
                content=turn.content,
                meta=dict(turn.metadata),
                created_at=turn.created_at or now,
                recorded_at=now,
                embedding_state="pending",
            )
            .returning(ContextTurn.id)
        ).scalar_one()
        ids.append(int(turn_id))
    keyword.index_rows(
        conn,
        "context",
        [(i, agent_id, index_text(turn_text(t.speaker or t.role, t.content))) for i, t in zip(ids, turns, strict=True)],
    )
    return ids


def _record(row: Any) -> ContextTurnRecord:
    return ContextTurnRecord(
        id=row.id,
        agent_id=row.agent_id,
        session_id=row.session_id,
        role=row.role,
        speaker=row.speaker,
        content=row.content,
        metadata=dict(row._mapping["metadata"] or {}),
        created_at=row.created_at,
        embedding_state=row.embedding_state,
    )


def load_turns(conn: Connection, agent_id: str, ids: Sequence[int]) -> dict[int, ContextTurnRecord]:
    if not ids:
        return {}
    rows = owned_rows(conn, ContextTurn.__table__, agent_id, ids)
    return {r.id: _record(r) for r in rows}


def timeline(
    conn: Connection,
    agent_id: str,
    *,
    session_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    newest_first: bool = False,
) -> list[ContextTurnRecord]:
    """Turns in conversation order (or newest first), optionally one session and a time range."""
    query = select(ContextTurn.__table__).where(ContextTurn.agent_id == agent_id)
    if session_id is not None:
        query = query.where(ContextTurn.session_id == session_id)
    if since is not None:
        query = query.where(ContextTurn.created_at >= since)
    if until is not None:
        query = query.where(ContextTurn.created_at <= until)
    if newest_first:
        query = query.order_by(ContextTurn.created_at.desc(), ContextTurn.id.desc())
    else:
        query = query.order_by(ContextTurn.created_at, ContextTurn.id)
    return [_record(r) for r in conn.execute(query.limit(limit)).all()]


def sessions(conn: Connection, agent_id: str, limit: int = 20) -> list[tuple[str, int, datetime, datetime]]:
    """Recent sessions as (session_id, turns, first, last), newest last-activity first."""
    rows = conn.execute(
        select(
            ContextTurn.session_id,
            func.count(),
            func.min(ContextTurn.created_at),
            func.max(ContextTurn.created_at),
        )
        .where(ContextTurn.agent_id == agent_id)
        .group_by(ContextTurn.session_id)
        .order_by(func.max(ContextTurn.created_at).desc())
        .limit(limit)
    ).all()
    return [(r[0], int(r[1]), r[2], r[3]) for r in rows]
