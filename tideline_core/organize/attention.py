"""The attention heatmap over the store: hits of the last days attributed to clusters at read time."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from tideline_core.attention import Heatmap, Hit, heatmap
from tideline_core.organize.clusters import memberships
from tideline_core.schema import AttentionHit
from tideline_core.store.database import Database
from tideline_core.timeutil import utcnow


def attention_heatmap(db: Database, agent_id: str, days: int = 7) -> Heatmap:
    since = utcnow() - timedelta(days=days)
    with db.read() as conn:
        hits = [
            Hit(r.narrative_id, r.similarity, r.source, r.created_at)
            for r in conn.execute(
                select(
                    AttentionHit.narrative_id, AttentionHit.similarity, AttentionHit.source, AttentionHit.created_at
                ).where(AttentionHit.agent_id == agent_id, AttentionHit.created_at >= since)
            )
        ]
        topics, soft = memberships(conn, agent_id)
    return heatmap(hits, topics, soft)
