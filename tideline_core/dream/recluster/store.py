"""Topic and soft clusters: planned, swapped in whole in one transaction (never half a table seen), and read."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select

from tideline_core.domain.memory_text import NarrativeFields, narrative_prose
from tideline_core.dream.plan import ReplaceSoftClusters, ReplaceTopics
from tideline_core.dream.recluster.soft import ClusterPair, Route, route, soft_clusters
from tideline_core.dream.recluster.topics import topic_clusters
from tideline_core.errors import NotFound
from tideline_core.numeric import np
from tideline_core.store.database import Database
from tideline_core.store.embeddings import to_blob, vectors_after
from tideline_core.store.lookup import chunks
from tideline_core.store.schema import (
    EmbeddingCluster,
    EmbeddingClusterAdjacency,
    EmbeddingClusterMember,
    Narrative,
    TopicCluster,
    TopicClusterMember,
)
from tideline_core.text.dates import utcnow


@dataclass(frozen=True)
class RebuildReport:
    clusters: int
    narratives: int


def _narrative_texts(conn: Connection, agent_id: str) -> list[tuple[int, str]]:
    """(id, `narrative_prose`) of each of the agent's narratives."""
    rows = conn.execute(
        select(Narrative.id, Narrative.gesture, Narrative.context, Narrative.moment, Narrative.cognition_direction)
        .where(Narrative.agent_id == agent_id)
        .order_by(Narrative.id)
    ).all()
    return [
        (r.id, narrative_prose(NarrativeFields(r.gesture, r.context, r.moment, r.cognition_direction, "", ())))
        for r in rows
    ]


def plan_topics(db: Database, agent_id: str) -> tuple[ReplaceTopics, int]:
    """The agent's topic clusters computed from its narratives now (nothing written), and how many narratives."""
    with db.read() as conn:
        texts = _narrative_texts(conn, agent_id)
    return ReplaceTopics(tuple(topic_clusters(texts))), len(texts)


def plan_soft_clusters(db: Database, agent_id: str, model: str) -> tuple[ReplaceSoftClusters, int]:
    """k-means soft clusters over the agent's narrative vectors of `model` (nothing written), and how many vectors."""
    with db.read() as conn:
        batch = vectors_after(conn, agent_id, "narrative", model)
        texts = dict(_narrative_texts(conn, agent_id))
    ids, matrix = batch.row_ids, batch.matrix
    if matrix is None or not ids:
        return ReplaceSoftClusters(model, None), 0
    # A re-embedded row appears twice in an id-ordered scan only if two models coexist; keep the last.
    last: dict[int, int] = {row: i for i, row in enumerate(ids)}
    ids = list(last)
    vectors = matrix[list(last.values())]
    return ReplaceSoftClusters(model, soft_clusters(ids, vectors, texts={i: texts.get(i, "") for i in ids})), len(ids)


def topic_counts(conn: Connection, agent_id: str) -> dict[str, int]:
    return {"clusters": _count(conn, TopicCluster, agent_id), "members": _count(conn, TopicClusterMember, agent_id)}


def soft_counts(conn: Connection, agent_id: str) -> dict[str, int]:
    return {
        "clusters": _count(conn, EmbeddingCluster, agent_id),
        "members": _count(conn, EmbeddingClusterMember, agent_id),
        "adjacent_pairs": _count(conn, EmbeddingClusterAdjacency, agent_id),
    }


def _count(conn: Connection, table: Any, agent_id: str) -> int:
    return int(conn.execute(select(func.count()).select_from(table).where(table.agent_id == agent_id)).scalar_one())


def replace_topics(conn: Connection, agent_id: str, intent: ReplaceTopics) -> None:
    """Swap the agent's topic clusters for the planned ones, in the caller's transaction."""
    now = utcnow()
    conn.execute(delete(TopicClusterMember).where(TopicClusterMember.agent_id == agent_id))
    conn.execute(delete(TopicCluster).where(TopicCluster.agent_id == agent_id))
    for cluster in intent.clusters:
        cluster_id = conn.execute(
            insert(TopicCluster)
            .values(agent_id=agent_id, keyword=cluster.keyword, label=cluster.keyword, size=cluster.size, built_at=now)
            .returning(TopicCluster.id)
        ).scalar_one()
        conn.execute(
            insert(TopicClusterMember),
            [{"cluster_id": cluster_id, "narrative_id": n, "agent_id": agent_id} for n in cluster.narrative_ids],
        )


def replace_soft_clusters(conn: Connection, agent_id: str, intent: ReplaceSoftClusters) -> None:
    """Swap the agent's soft clusters for the planned ones, in the caller's transaction."""
    conn.execute(delete(EmbeddingClusterAdjacency).where(EmbeddingClusterAdjacency.agent_id == agent_id))
    conn.execute(delete(EmbeddingClusterMember).where(EmbeddingClusterMember.agent_id == agent_id))
    conn.execute(delete(EmbeddingCluster).where(EmbeddingCluster.agent_id == agent_id))
    result = intent.clusters
    if result is None:
        return
    now = utcnow()
    id_of: dict[int, int] = {}
    for label in range(result.k):
        id_of[label] = conn.execute(
            insert(EmbeddingCluster)
            .values(
                agent_id=agent_id,
                label=label,
                name=result.names[label],
                size=result.sizes[label],
                model=intent.model,
                centroid=to_blob(result.centroids[label]),
                built_at=now,
            )
            .returning(EmbeddingCluster.id)
        ).scalar_one()
    conn.execute(
        insert(EmbeddingClusterMember),
        [
            {
                "cluster_id": id_of[m.cluster],
                "narrative_id": m.narrative_id,
                "agent_id": agent_id,
                "rank": m.rank,
                "distance": m.distance,
            }
            for m in result.memberships
        ],
    )
    if result.adjacency:
        conn.execute(
            insert(EmbeddingClusterAdjacency),
            [{"agent_id": agent_id, "cluster_a": p.a, "cluster_b": p.b, "shared": p.shared} for p in result.adjacency],
        )


def rebuild_topics(db: Database, agent_id: str) -> RebuildReport:
    """Compute and swap in the agent's topic clusters at once, outside any dream run (tests, benches)."""
    intent, narratives = plan_topics(db, agent_id)
    with db.write() as conn:
        replace_topics(conn, agent_id, intent)
    return RebuildReport(clusters=len(intent.clusters), narratives=narratives)


def rebuild_soft_clusters(db: Database, agent_id: str, model: str) -> RebuildReport:
    """Compute and swap in the agent's soft clusters at once, outside any dream run (tests, benches)."""
    intent, narratives = plan_soft_clusters(db, agent_id, model)
    with db.write() as conn:
        replace_soft_clusters(conn, agent_id, intent)
    return RebuildReport(clusters=0 if intent.clusters is None else intent.clusters.k, narratives=narratives)


@dataclass(frozen=True)
class TopicSummary:
    keyword: str
    label: str
    size: int
    narrative_ids: tuple[int, ...]


def read_topics(conn: Connection, agent_id: str, *, limit: int = 25, sample: int = 5) -> list[TopicSummary]:
    """The largest topic clusters with a few member ids each (newest first)."""
    clusters = conn.execute(
        select(TopicCluster.id, TopicCluster.keyword, TopicCluster.label, TopicCluster.size)
        .where(TopicCluster.agent_id == agent_id)
        .order_by(TopicCluster.size.desc(), TopicCluster.keyword)
        .limit(limit)
    ).all()
    members: dict[int, list[int]] = defaultdict(list)
    # One walk of the primary key per cluster, `sample` rows deep: a large topic holds tens of
    # thousands of members, and reading them all to keep five cost a third of a second at 100k.
    for cluster in clusters if sample > 0 else ():
        members[cluster.id] = list(
            conn.execute(
                select(TopicClusterMember.narrative_id)
                .where(TopicClusterMember.cluster_id == cluster.id)
                .order_by(TopicClusterMember.narrative_id.desc())
                .limit(sample)
            ).scalars()
        )
    return [TopicSummary(c.keyword, c.label, c.size, tuple(members[c.id])) for c in clusters]


@dataclass(frozen=True)
class Neighbour:
    """A cluster sharing `shared` narratives with another."""

    label: int
    shared: int


@dataclass(frozen=True)
class SoftClusterSummary:
    label: int
    name: str
    size: int
    neighbours: tuple[Neighbour, ...]  # most shared first


@dataclass(frozen=True)
class SoftClusterDetail:
    summary: SoftClusterSummary
    members: tuple[tuple[int, int, float], ...]  # (narrative id, rank, distance), nearest first


def _adjacency(conn: Connection, agent_id: str) -> list[ClusterPair]:
    rows = conn.execute(
        select(
            EmbeddingClusterAdjacency.cluster_a, EmbeddingClusterAdjacency.cluster_b, EmbeddingClusterAdjacency.shared
        ).where(EmbeddingClusterAdjacency.agent_id == agent_id)
    ).all()
    return [ClusterPair(r.cluster_a, r.cluster_b, r.shared) for r in rows]


def _neighbours(pairs: list[ClusterPair]) -> dict[int, tuple[Neighbour, ...]]:
    found: dict[int, list[Neighbour]] = defaultdict(list)
    for p in pairs:
        found[p.a].append(Neighbour(p.b, p.shared))
        found[p.b].append(Neighbour(p.a, p.shared))
    return {label: tuple(sorted(items, key=lambda n: (-n.shared, n.label))) for label, items in found.items()}


def read_soft_clusters(conn: Connection, agent_id: str) -> list[SoftClusterSummary]:
    neighbours = _neighbours(_adjacency(conn, agent_id))
    rows = conn.execute(
        select(EmbeddingCluster.label, EmbeddingCluster.name, EmbeddingCluster.size)
        .where(EmbeddingCluster.agent_id == agent_id)
        .order_by(EmbeddingCluster.size.desc(), EmbeddingCluster.label)
    ).all()
    return [SoftClusterSummary(r.label, r.name, r.size, neighbours.get(r.label, ())) for r in rows]


def read_soft_cluster(conn: Connection, agent_id: str, label: int, *, limit: int = 50) -> SoftClusterDetail:
    row = conn.execute(
        select(EmbeddingCluster.id, EmbeddingCluster.name, EmbeddingCluster.size).where(
            EmbeddingCluster.agent_id == agent_id, EmbeddingCluster.label == label
        )
    ).one_or_none()
    if row is None:
        raise NotFound(f"soft cluster {label} does not exist for this agent (run a recluster first?)")
    members = conn.execute(
        select(EmbeddingClusterMember.narrative_id, EmbeddingClusterMember.rank, EmbeddingClusterMember.distance)
        .where(EmbeddingClusterMember.cluster_id == row.id)
        .order_by(EmbeddingClusterMember.distance, EmbeddingClusterMember.narrative_id)
        .limit(limit)
    ).all()
    neighbours = _neighbours(_adjacency(conn, agent_id))
    return SoftClusterDetail(
        SoftClusterSummary(label, row.name, row.size, neighbours.get(label, ())),
        tuple((m.narrative_id, m.rank, m.distance) for m in members),
    )


def route_query(conn: Connection, agent_id: str, query: np.ndarray, model: str, top: int = 3) -> Route | None:
    """The query's top clusters and their neighbours, or None when the agent has no clusters of `model`."""
    rows = conn.execute(
        select(EmbeddingCluster.label, EmbeddingCluster.centroid)
        .where(EmbeddingCluster.agent_id == agent_id, EmbeddingCluster.model == model)
        .order_by(EmbeddingCluster.label)
    ).all()
    if not rows:
        return None
    centroids = np.stack([np.frombuffer(r.centroid, dtype=np.float32) for r in rows])
    return route(query, centroids, _adjacency(conn, agent_id), top=top)


def memberships(
    conn: Connection, agent_id: str, narrative_ids: Sequence[int] | None = None
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """(topic keyword → narrative ids, soft cluster name → narrative ids), joined at read time; only the
    memberships of `narrative_ids` when given (a heatmap needs its hit narratives', not every cluster whole)."""
    topics: dict[str, list[int]] = defaultdict(list)
    soft: dict[str, list[int]] = defaultdict(list)
    for chunk in [None] if narrative_ids is None else list(chunks(sorted(set(narrative_ids)))):
        topic_rows = (
            select(TopicCluster.keyword, TopicClusterMember.narrative_id)
            .join(TopicClusterMember, TopicClusterMember.cluster_id == TopicCluster.id)
            .where(TopicCluster.agent_id == agent_id)
        )
        soft_rows = (
            select(EmbeddingCluster.name, EmbeddingClusterMember.narrative_id)
            .join(EmbeddingClusterMember, EmbeddingClusterMember.cluster_id == EmbeddingCluster.id)
            .where(EmbeddingCluster.agent_id == agent_id)
        )
        if chunk is not None:
            topic_rows = topic_rows.where(TopicClusterMember.narrative_id.in_(chunk))
            soft_rows = soft_rows.where(EmbeddingClusterMember.narrative_id.in_(chunk))
        for keyword, nid in conn.execute(topic_rows):
            topics[keyword].append(nid)
        for name, nid in conn.execute(soft_rows):
            soft[name].append(nid)
    return dict(topics), dict(soft)


def cluster_sizes(conn: Connection, agent_id: str) -> tuple[dict[str, int], dict[str, int]]:
    """(topic keyword → members, soft cluster name → members), as the rebuild counted them."""
    topics: dict[str, int] = defaultdict(int)
    for keyword, size in conn.execute(
        select(TopicCluster.keyword, TopicCluster.size).where(TopicCluster.agent_id == agent_id)
    ):
        topics[keyword] += int(size)
    soft: dict[str, int] = defaultdict(int)
    for name, size in conn.execute(
        select(EmbeddingCluster.name, EmbeddingCluster.size).where(EmbeddingCluster.agent_id == agent_id)
    ):
        soft[name] += int(size)
    return dict(topics), dict(soft)
