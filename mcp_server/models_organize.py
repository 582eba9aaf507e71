"""Structured results of the tools over the dream's products: entity graph, heatmap, soft clusters, topics, trigger."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tideline_core.attention import Heatmap, to_markdown
from tideline_core.service import GraphView, SoftClustersView, TopicsView


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


# --- memory_graph -----------------------------------------------------------------------------

GraphMode = Literal["top", "entity", "pair"]


class GraphNode(_Out):
    name: str
    mentions: int = Field(description="narratives that mention the entity")
    known: bool = Field(description="whether the name resolved to a KNOWN_PERSONS entry")
    usual_roles: list[str] = Field(description="the entity's most frequent roles, most frequent first")
    first_seen: str = Field(description="ISO-8601 UTC time of the first narrative mentioning it")
    last_seen: str = Field(description="ISO-8601 UTC time of the latest narrative mentioning it")


class GraphEdge(_Out):
    source: str
    target: str
    source_role: str
    target_role: str
    count: int = Field(description="narratives in which the two appear together in these roles")


class GraphResult(_Out):
    mode: GraphMode
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    note: str | None = Field(default=None, description="set when the graph has nothing to show, with why")

    @classmethod
    def of(cls, view: GraphView) -> GraphResult:
        return cls(
            mode=view.mode,
            nodes=[
                GraphNode(
                    name=n.name,
                    mentions=n.mentions,
                    known=n.known,
                    usual_roles=list(n.usual_roles),
                    first_seen=n.first_seen,
                    last_seen=n.last_seen,
                )
                for n in view.nodes
            ],
            edges=[
                GraphEdge(
                    source=e.source,
                    target=e.target,
                    source_role=e.source_role,
                    target_role=e.target_role,
                    count=e.count,
                )
                for e in view.edges
            ],
            note=view.note,
        )


# --- memory_attention_heatmap -----------------------------------------------------------------


class HeatRow(_Out):
    cluster: str
    hits: int
    share: float = Field(description="this cluster's hits over all hits (a hit counts once per cluster holding it)")
    bar: str
    mean_similarity: float
    sources: dict[str, int] = Field(description="hits per source (t1, search, recall, ...)")


class Desert(_Out):
    cluster: str
    size: int = Field(description="narratives in the cluster, none of which was retrieved")


class KindHeat(_Out):
    kind: str = Field(description="topic (keyword clusters) or embedding (soft clusters)")
    rows: list[HeatRow]
    deserts: list[Desert] = Field(description="clusters never lit in the window, largest first")
    unclustered_hits: int


class HeatmapResult(_Out):
    days: int
    total_hits: int
    first_hit: datetime | None
    last_hit: datetime | None
    kinds: list[KindHeat]
    markdown: str = Field(description="the same heatmap as Markdown tables")

    @classmethod
    def of(cls, days: int, heat: Heatmap) -> HeatmapResult:
        return cls(
            days=days,
            total_hits=heat.total_hits,
            first_hit=heat.first_hit,
            last_hit=heat.last_hit,
            kinds=[
                KindHeat(
                    kind=k.kind,
                    rows=[
                        HeatRow(
                            cluster=r.cluster,
                            hits=r.hits,
                            share=r.share,
                            bar=r.bar,
                            mean_similarity=r.mean_similarity,
                            sources=dict(r.sources),
                        )
                        for r in k.rows
                    ],
                    deserts=[Desert(cluster=d.cluster, size=d.size) for d in k.deserts],
                    unclustered_hits=k.unclustered_hits,
                )
                for k in heat.kinds
            ],
            markdown=to_markdown(heat),
        )


# --- memory_soft_clusters ---------------------------------------------------------------------


class Neighbour(_Out):
    label: int
    shared: int = Field(description="narratives the two clusters share")


class SoftCluster(_Out):
    label: int
    name: str = Field(description="'#label' and the words most typical of the cluster")
    size: int
    neighbours: list[Neighbour]


class ClusterMember(_Out):
    narrative_id: int
    rank: int = Field(description="0 when this is the narrative's nearest cluster, 1 or 2 for its next ones")
    distance: float = Field(description="1 − cosine to the cluster centre; smaller is more central")
    gesture: str


class Route(_Out):
    primary: list[int] = Field(description="the clusters nearest the query, nearest first")
    neighbours: list[int] = Field(description="clusters sharing narratives with the primary ones")


class SoftClustersResult(_Out):
    clusters: list[SoftCluster] = Field(description="every cluster, or the one asked for")
    members: list[ClusterMember] = Field(default_factory=list, description="the asked-for cluster's most central")
    route: Route | None = Field(default=None, description="where `query` would be routed, when one was given")
    note: str | None = None

    @classmethod
    def of(cls, view: SoftClustersView) -> SoftClustersResult:
        return cls(
            clusters=[
                SoftCluster(
                    label=s.label,
                    name=s.name,
                    size=s.size,
                    neighbours=[Neighbour(label=other, shared=shared) for other, shared in s.neighbours],
                )
                for s in view.clusters
            ],
            members=[
                ClusterMember(narrative_id=m.narrative_id, rank=m.rank, distance=m.distance, gesture=m.gesture)
                for m in view.members
            ],
            route=(
                Route(primary=list(view.route.primary), neighbours=list(view.route.neighbours))
                if view.route is not None
                else None
            ),
            note=view.note,
        )


# --- memory_topics ----------------------------------------------------------------------------


class TopicSample(_Out):
    id: int
    gesture: str


class Topic(_Out):
    keyword: str
    label: str
    size: int = Field(description="narratives under this keyword")
    samples: list[TopicSample] = Field(description="the newest of them")


class TopicsResult(_Out):
    count: int
    topics: list[Topic]
    note: str | None = None

    @classmethod
    def of(cls, view: TopicsView) -> TopicsResult:
        topics = [
            Topic(
                keyword=t.keyword,
                label=t.label,
                size=t.size,
                samples=[TopicSample(id=i, gesture=gesture) for i, gesture in t.samples],
            )
            for t in view.topics
        ]
        return cls(count=len(topics), topics=topics, note=view.note)


# --- memory_trigger ---------------------------------------------------------------------------


class TriggerResult(_Out):
    agent: str
    job: str
    task_id: str = Field(description="the Celery task id (shown in Flower); memory_status lists the stage's run")
    queue: Literal["dream"] = "dream"
