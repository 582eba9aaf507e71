"""The drift's store reads: the seed (the heaviest recent memory not rested) and the memories connected to it."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Connection, select

from tideline_core.domain.records import NarrativeRecord
from tideline_core.store.narratives import load_narratives
from tideline_core.store.schema import EmbeddingClusterAdjacency, EmbeddingClusterMember, Narrative, NarrativeTag
from tideline_core.text.dates import utcnow

SEED_DAYS = 30
POOL = 300  # connected candidates considered before picking the most distant
SKIPPED_KINDS = ("dream", "digest")


def seed(conn: Connection, agent_id: str, rested: set[int]) -> NarrativeRecord | None:
    since = utcnow() - timedelta(days=SEED_DAYS)
    ids = conn.execute(
        select(Narrative.id)
        .where(
            Narrative.agent_id == agent_id,
            Narrative.created_at >= since,
            Narrative.superseded_by.is_(None),
            Narrative.narrative_type.not_in(SKIPPED_KINDS),
        )
        .order_by(Narrative.weight.desc(), Narrative.id.desc())
        .limit(len(rested) + 1)
    ).scalars()
    for narrative_id in ids:
        if narrative_id not in rested:
            return load_narratives(conn, agent_id, [narrative_id]).get(narrative_id)
    return None


def _current(conn: Connection, agent_id: str, ids: set[int], exclude: int) -> set[int]:
    if not ids:
        return set()
    rows = conn.execute(
        select(Narrative.id).where(
            Narrative.agent_id == agent_id,
            Narrative.id.in_(sorted(ids)[:2_000]),
            Narrative.superseded_by.is_(None),
            Narrative.narrative_type.not_in(SKIPPED_KINDS),
        )
    ).scalars()
    return {i for i in rows if i != exclude}


def connected(conn: Connection, agent_id: str, seed: NarrativeRecord) -> dict[int, str]:
    """Current memories connected to the seed: {id: how}, the first way found (clusters, tags, entities)."""
    found: dict[int, str] = {}
    own = set(
        conn.execute(
            select(EmbeddingClusterMember.cluster_id).where(EmbeddingClusterMember.narrative_id == seed.id)
        ).scalars()
    )
    if own:
        pairs = conn.execute(
            select(EmbeddingClusterAdjacency.cluster_a, EmbeddingClusterAdjacency.cluster_b).where(
                EmbeddingClusterAdjacency.agent_id == agent_id
            )
        ).all()
        adjacent = {b for a, b in pairs if a in own} | {a for a, b in pairs if b in own}
        adjacent -= own
        members = conn.execute(
            select(EmbeddingClusterMember.narrative_id, EmbeddingClusterMember.cluster_id)
            .where(EmbeddingClusterMember.cluster_id.in_(sorted(adjacent)))
            .limit(POOL)
        ).all()
        for narrative_id in _current(conn, agent_id, {m for m, _ in members}, seed.id):
            found.setdefault(narrative_id, "an adjacent cluster of meaning")
    if seed.tags:
        rows = conn.execute(
            select(NarrativeTag.narrative_id, NarrativeTag.tag)
            .where(NarrativeTag.agent_id == agent_id, NarrativeTag.tag.in_(list(seed.tags)))
            .order_by(NarrativeTag.narrative_id)
            .limit(POOL)
        ).all()
        current = _current(conn, agent_id, {n for n, _ in rows}, seed.id)
        for narrative_id, tag in rows:
            if narrative_id in current:
                found.setdefault(narrative_id, f"the tag {tag}")
    names = {e.lower(): e for e in seed.related_entities}
    if names:
        mentions = conn.execute(
            select(Narrative.id, Narrative.related_entities)
            .where(
                Narrative.agent_id == agent_id,
                Narrative.superseded_by.is_(None),
                Narrative.narrative_type.not_in(SKIPPED_KINDS),
                Narrative.id != seed.id,
            )
            .order_by(Narrative.id.desc())
            .limit(5_000)
        ).all()
        for narrative_id, entities in mentions:
            shared = sorted(names[e.lower()] for e in entities or () if e.lower() in names)
            if shared:
                found.setdefault(narrative_id, f"the name {shared[0]}")
    return found
