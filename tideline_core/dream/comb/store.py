"""The comb's store reads: earlier memories that share a tag with the day's, and heavy memories nobody recalled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from tideline_core.attention.store import hits_since
from tideline_core.domain.records import NarrativeRecord
from tideline_core.dream.memories import shown
from tideline_core.store.narratives import load_narratives
from tideline_core.store.schema import Narrative, NarrativeTag

DESERT_DAYS = 30  # a heavy memory no search or recall hit for this long is an attention desert
MAX_PARTNERS = 400  # older memories sharing a tag or entity considered per night


def partners(conn: Connection, agent_id: str, day: Sequence[NarrativeRecord]) -> list[NarrativeRecord]:
    """Earlier current memories that share a tag with the day's (the entity check is done on the records)."""
    tags = sorted({t for n in day for t in n.tags})
    day_ids = {n.id for n in day}
    if not tags:
        return []
    ids = [
        i
        for i in conn.execute(
            select(NarrativeTag.narrative_id)
            .join(Narrative, Narrative.id == NarrativeTag.narrative_id)
            .where(
                NarrativeTag.agent_id == agent_id,
                NarrativeTag.tag.in_(tags[:200]),
                Narrative.superseded_by.is_(None),
                Narrative.narrative_type.not_in(["dream", "digest"]),
            )
            .distinct()
            .order_by(NarrativeTag.narrative_id.desc())
            .limit(MAX_PARTNERS)
        ).scalars()
        if i not in day_ids
    ]
    return list(load_narratives(conn, agent_id, ids).values())


def deserts(conn: Connection, agent_id: str, exclude: set[int], limit: int = 5) -> list[dict[str, Any]]:
    """Heavy memories nobody recalled for a month: candidates for review (a higher or lower weight, a thread)."""
    recalled = {h.narrative_id for h in hits_since(conn, agent_id, DESERT_DAYS)}
    ids = [
        i
        for i in conn.execute(
            select(Narrative.id)
            .where(
                Narrative.agent_id == agent_id,
                Narrative.superseded_by.is_(None),
                Narrative.narrative_type.not_in(["dream", "digest"]),
                Narrative.weight >= 0.6,
            )
            .order_by(Narrative.weight.desc(), Narrative.id.desc())
            .limit(200)
        ).scalars()
        if i not in recalled and i not in exclude
    ][:limit]
    found = load_narratives(conn, agent_id, ids)
    return [shown(found[i]) for i in ids if i in found]
