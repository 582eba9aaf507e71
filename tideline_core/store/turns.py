"""Raw context turns: insert (one at a time, a whole import once, or imported turns by key), load, timeline."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, insert, or_, select

from tideline_core.domain.inputs import ContextTurnIn
from tideline_core.domain.memory_text import WINDOW_TURNS, turn_text, turn_window
from tideline_core.domain.records import ContextTurnRecord
from tideline_core.store import keywords
from tideline_core.store.lookup import as_record, owned_rows
from tideline_core.store.schema import ContextTurn
from tideline_core.text.dates import utcnow

IMPORT_KEY = "import_id"
# An imported session turn's key (`tideline_core.importing.keys`), kept in its metadata.
IMPORT_HASH = "import_hash"
# Keys per IN list: well under every backend's limit on bound parameters.
KEYS_PER_QUERY = 500
# Imported turns' times further apart than this are looked up in separate index ranges.
KEY_SPAN_GAP = timedelta(hours=1)


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
    if not turns:
        return []
    now = utcnow()
    table = ContextTurn.__table__
    rows = [
        {
            "agent_id": agent_id,
            "session_id": turn.session_id,
            "role": turn.role,
            "speaker": turn.speaker or turn.role,
            "content": turn.content,
            "metadata": dict(turn.metadata),
            "created_at": turn.created_at or now,
            "recorded_at": now,
            "embedding_state": "pending",
        }
        for turn in turns
    ]
    # One executemany (batched INSERT ... RETURNING): an import's 500-turn batch costs one statement, not 500.
    result = conn.execute(insert(table).returning(table.c.id, sort_by_parameter_order=True), rows)
    ids = [int(i) for i in result.scalars().all()]
    keywords.index_new(
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


def imported_keys(conn: Connection, agent_id: str, wanted: Sequence[tuple[str, datetime | None, str]]) -> set[str]:
    """Which of the `wanted` imported turns, each (session_id, created_at, key), the agent already has: their keys.

    A turn with a time can only be stored at that time (its key includes it), so those are looked up
    through the (agent, created_at) index, one range per stretch of the batch's times with no gap
    longer than `KEY_SPAN_GAP`: a batch costs what the rows of its own time spans cost, however
    large the agent's memory, and a batch of many small sessions from different months does not
    scan the months between them. Turns with no time are looked up in their sessions.
    """
    key = ContextTurn.meta[IMPORT_HASH].as_string()
    found: set[str] = set()
    for first, last, keys in _time_spans(sorted((at, k) for _s, at, k in wanted if at is not None)):
        for chunk in _chunks(keys):
            found.update(
                conn.execute(
                    select(key).where(
                        ContextTurn.agent_id == agent_id,
                        ContextTurn.created_at >= first,
                        ContextTurn.created_at <= last,
                        key.in_(chunk),
                    )
                ).scalars()
            )
    untimed: dict[str, list[str]] = {}
    for session, at, k in wanted:
        if at is None:
            untimed.setdefault(session, []).append(k)
    for session, keys in untimed.items():
        for chunk in _chunks(keys):
            found.update(
                conn.execute(
                    select(key).where(
                        ContextTurn.agent_id == agent_id, ContextTurn.session_id == session, key.in_(chunk)
                    )
                ).scalars()
            )
    return found


def _time_spans(timed: Sequence[tuple[datetime, str]]) -> list[tuple[datetime, datetime, list[str]]]:
    """Sorted (time, key) pairs cut wherever two neighbours are more than `KEY_SPAN_GAP` apart."""
    spans: list[tuple[datetime, datetime, list[str]]] = []
    for at, k in timed:
        if spans and at - spans[-1][1] <= KEY_SPAN_GAP:
            first, _last, keys = spans[-1]
            keys.append(k)
            spans[-1] = (first, at, keys)
        else:
            spans.append((at, at, [k]))
    return spans


def _chunks(keys: Sequence[str]) -> list[Sequence[str]]:
    return [keys[i : i + KEYS_PER_QUERY] for i in range(0, len(keys), KEYS_PER_QUERY)]


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


def speaker_roles(conn: Connection, agent_id: str) -> list[tuple[str, str, str]]:
    """Each (session, role, speaker) of the agent's user and assistant turns, once: who is the agent, who its user."""
    rows = conn.execute(
        select(ContextTurn.session_id, ContextTurn.role, ContextTurn.speaker)
        .where(ContextTurn.agent_id == agent_id, ContextTurn.role.in_(("user", "assistant")))
        .distinct()
    ).all()
    return [(str(r.session_id), str(r.role), str(r.speaker)) for r in rows]
