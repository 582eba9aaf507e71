"""Raw context turns: insert (one at a time or a whole import, exactly once), load, timeline, sessions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, insert, or_, select

from tideline_core.inputs import ContextTurnIn
from tideline_core.memory_text import WINDOW_TURNS, turn_text, turn_window
from tideline_core.records import ContextTurnRecord
from tideline_core.store import fts
from tideline_core.store.lookup import as_record, owned_rows
from tideline_core.store.schema import ContextTurn
from tideline_core.timeutil import utcnow

IMPORT_KEY = "import_id"


def turn_windows(conn: Connection, ids: Sequence[int]) -> dict[int, str]:
    """Each turn's `turn_window` text: the turn after the turns preceding it in its session.

    Order is (created_at, id), the conversation order.
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
            .limit(WINDOW_TURNS)
        ).all()
        out[r.id] = turn_window([(e.speaker, e.content) for e in reversed(earlier)], r.speaker, r.content)
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
    fts.index_new(
        conn,
        "context",
        [(i, agent_id, turn_text(t.speaker or t.role, t.content)) for i, t in zip(ids, turns, strict=True)],
    )
    return ids


def import_turns_once(
    conn: Connection, agent_id: str, import_id: str, turns: Sequence[ContextTurnIn]
) -> list[int] | None:
    """Insert `turns` tagged with `import_id` in their metadata; None when this import is already stored.

    Call inside one write transaction: either the whole import is there or none of it is, so a
    redelivered import task finds its first turn and stops.
    """
    first_session = turns[0].session_id if turns else ""
    seen = conn.execute(
        select(ContextTurn.id)
        .where(
            ContextTurn.agent_id == agent_id,
            ContextTurn.session_id == first_session,
            ContextTurn.meta[IMPORT_KEY].as_string() == import_id,
        )
        .limit(1)
    ).first()
    if seen is not None:
        return None
    tagged = [turn.model_copy(update={"metadata": {**turn.metadata, IMPORT_KEY: import_id}}) for turn in turns]
    return insert_turns(conn, agent_id, tagged)


def _record(row: Any) -> ContextTurnRecord:
    return as_record(ContextTurnRecord, row, metadata=dict(row._mapping["metadata"] or {}))


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
