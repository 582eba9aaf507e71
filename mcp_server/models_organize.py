"""Structured results of the tools over the dream's products: entity graph, heatmap, soft clusters, topics, trigger."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from mcp_server.models import Result
from tideline_core.attention.heatmap import Heatmap, to_markdown

# --- memory_graph -----------------------------------------------------------------------------

GraphMode = Literal["top", "entity", "pair"]


class GraphNode(Result):
    name: str
    mentions: int = Field(description="narratives that mention the entity")
    known: bool = Field(description="whether the name resolved to a KNOWN_PERSONS entry")
    usual_roles: list[str] = Field(description="the entity's most frequent roles, most frequent first")
    first_seen: str = Field(description="ISO-8601 UTC time of the first narrative mentioning it")
    last_seen: str = Field(description="ISO-8601 UTC time of the latest narrative mentioning it")


class GraphEdge(Result):
    source: str
    target: str
    source_role: str
    target_role: str
    count: int = Field(description="narratives in which the two appear together in these roles")


class GraphResult(Result):
    mode: GraphMode
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    note: str | None = Field(default=None, description="set when the graph has nothing to show, with why")


# --- memory_attention_heatmap -----------------------------------------------------------------


class HeatRow(Result):
    cluster: str
    hits: int
    share: float = Field(description="this cluster's hits over all hits (a hit counts once per cluster holding it)")
    bar: str
    mean_similarity: float | None = Field(
        description="mean similarity of the hits that measured one; null when all were recalls (asked by filter)"
    )
    sources: dict[str, int] = Field(description="hits per source (t1, search, recall, ...)")


class Desert(Result):
    cluster: str
    size: int = Field(description="narratives in the cluster, none of which was retrieved")


class KindHeat(Result):
    kind: str = Field(description="topic (keyword clusters) or embedding (soft clusters)")
    rows: list[HeatRow]
    deserts: list[Desert] = Field(description="clusters never lit in the window, largest first")
    unclustered_hits: int


class HeatmapResult(Result):
    days: int
    total_hits: int
    first_hit: datetime | None
    last_hit: datetime | None
    kinds: list[KindHeat]
    markdown: str = Field(description="the same heatmap as Markdown tables")

    @classmethod
    def of_heatmap(cls, days: int, heat: Heatmap) -> HeatmapResult:
        return cls(
            days=days,
            total_hits=heat.total_hits,
            first_hit=heat.first_hit,
            last_hit=heat.last_hit,
            kinds=[KindHeat.of(kind) for kind in heat.kinds],
            markdown=to_markdown(heat),
        )


# --- memory_soft_clusters ---------------------------------------------------------------------


class Neighbour(Result):
    label: int
    shared: int = Field(description="narratives the two clusters share")


class SoftCluster(Result):
    label: int
    name: str = Field(description="'#label' and the words most typical of the cluster")
    size: int
    neighbours: list[Neighbour]


class ClusterMember(Result):
    narrative_id: int
    rank: int = Field(description="0 when this is the narrative's nearest cluster, 1 or 2 for its next ones")
    distance: float = Field(description="1 − cosine to the cluster centre; smaller is more central")
    gesture: str


class Route(Result):
    primary: list[int] = Field(description="the clusters nearest the query, nearest first")
    neighbours: list[int] = Field(description="clusters sharing narratives with the primary ones")


class SoftClustersResult(Result):
    clusters: list[SoftCluster] = Field(description="every cluster, or the one asked for")
    members: list[ClusterMember] = Field(default_factory=list, description="the asked-for cluster's most central")
    route: Route | None = Field(default=None, description="where `query` would be routed, when one was given")
    note: str | None = None


# --- memory_topics ----------------------------------------------------------------------------


class TopicSample(Result):
    id: int
    gesture: str


class Topic(Result):
    keyword: str
    label: str
    size: int = Field(description="narratives under this keyword")
    samples: list[TopicSample] = Field(description="the newest of them")


class TopicsResult(Result):
    count: int
    topics: list[Topic]
    note: str | None = None


# --- memory_trigger ---------------------------------------------------------------------------
