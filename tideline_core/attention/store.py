"""The attention log: hits written by the ingest worker (never by a request), read back as a heatmap."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import Connection, insert, select

from tideline_core.errors import InvalidInput
from tideline_core.store.lookup import owned_rows
from tideline_core.store.schema import AttentionHit, Narrative
from tideline_core.text.dates import utcnow

if TYPE_CHECKING:
    from tideline_core.attention.heatmap import Hit

MAX_SOURCE = 16


def log_hits(
    conn: Connection, agent_id: str, hits: Sequence[tuple[int, float | None]], source: str, at: datetime
) -> int:
    """Insert hits on the agent's own narratives; a replay of the same (time, source, narrative) adds nothing.

    A similarity of None says the retrieval measured none (a recall asks by filter, not by meaning).

    `at` is when the retrieval happened (set by the publisher), which makes the task idempotent.
    """
    if not source or len(source) > MAX_SOURCE:
        raise InvalidInput("source", f"must be 1–{MAX_SOURCE} characters, got {len(source)}")
    wanted: dict[int, float | None] = {}
    for narrative_id, similarity in hits:
        wanted.setdefault(int(narrative_id), None if similarity is None else float(similarity))
    if not wanted:
        return 0
    narratives, table = Narrative.__table__, AttentionHit.__table__
    own = {r.id for r in owned_rows(conn, narratives, agent_id, wanted, [narratives.c.id])}
    logged = set(
        conn.execute(
            select(table.c.narrative_id).where(
                table.c.agent_id == agent_id,
                table.c.created_at == at,
                table.c.source == source,
                table.c.narrative_id.in_(list(wanted)),
            )
        ).scalars()
    )
    rows = [
        {"agent_id": agent_id, "narrative_id": nid, "similarity": sim, "source": source, "created_at": at}
        for nid, sim in wanted.items()
        if nid in own and nid not in logged
    ]
    if rows:
        conn.execute(insert(table), rows)
    return len(rows)


def hits_since(conn: Connection, agent_id: str, days: int) -> list[Hit]:
    """The agent's logged hits of the last `days` days."""
    from tideline_core.attention.heatmap import Hit  # the heatmap's input: what only logs hits does not load it

    since = utcnow() - timedelta(days=days)
    return [
        Hit(r.narrative_id, r.similarity, r.source, r.created_at)
        for r in conn.execute(
            select(
                AttentionHit.narrative_id, AttentionHit.similarity, AttentionHit.source, AttentionHit.created_at
            ).where(AttentionHit.agent_id == agent_id, AttentionHit.created_at >= since)
        )
    ]
