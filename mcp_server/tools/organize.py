"""Script-layer tools: memory_graph, memory_attention_heatmap, memory_soft_clusters, memory_topics, memory_trigger."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations

from mcp_server.context import AppContext
from mcp_server.models_organize import (
    ClusterMember,
    Desert,
    GraphEdge,
    GraphMode,
    GraphNode,
    GraphResult,
    HeatmapResult,
    HeatRow,
    KindHeat,
    Neighbour,
    Route,
    SoftCluster,
    SoftClustersResult,
    Topic,
    TopicSample,
    TopicsResult,
    TriggerResult,
)
from mcp_server.queries import GraphQuery, HeatmapQuery, SoftClustersQuery, TopicsQuery, TriggerQuery
from mcp_server.tools._edge import READ, app_of, given, offload, spec, tool_errors
from tideline_core import attention
from tideline_core.errors import BrokerUnavailable, ConfigurationError, EmbedderUnavailable, InvalidInput
from tideline_core.inputs import parse
from tideline_core.organize import clusters, graph
from tideline_core.organize.attention import attention_heatmap
from tideline_core.organize.clusters import SoftClusterSummary
from tideline_core.store.narratives import load_narratives

# A trigger enqueues a rebuild of derived tables from the memories themselves: repeating it gives the
# same result, and no memory is changed or lost.
TRIGGER = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
NOT_BUILT = "nothing built yet: the nightly dream builds it, or call memory_trigger with job='{job}' now"

Entity = Annotated[Any, spec(GraphQuery, "entity", "An entity's name: its node and its edges.")]
Other = Annotated[Any, spec(GraphQuery, "other", "With `entity`: only the edges between the two.")]
Top = Annotated[Any, spec(GraphQuery, "top", "How many nodes and edges at most, integer 1–200 (default 20).")]
Days = Annotated[Any, spec(HeatmapQuery, "days", "How many days back, integer 1–365 (default 7).")]
Label = Annotated[Any, spec(SoftClustersQuery, "label", "A cluster's label (from the list): members, neighbours.")]
RouteQuery = Annotated[Any, spec(SoftClustersQuery, "query", "Text to route: which clusters it would light up.")]
MemberLimit = Annotated[Any, spec(SoftClustersQuery, "limit", "Members shown for `label`, 1–200 (default 20).")]
TopicLimit = Annotated[Any, spec(TopicsQuery, "limit", "How many topics, largest first, integer 1–200 (default 25).")]
Sample = Annotated[Any, spec(TopicsQuery, "sample", "Example memories per topic, integer 0–20 (default 3).")]
Job = Annotated[
    Any,
    spec(
        TriggerQuery,
        "job",
        "recluster (topics + soft clusters), refresh (recurrence + weights), "
        "graph (entity graph) or scan (unindexed context report).",
    ),
]


async def memory_graph(ctx: Context, entity: Entity = None, other: Other = None, top: Top = None) -> GraphResult:
    """See who appears in your memories, in which roles, and with whom.

    With no arguments: the most mentioned people and things and the strongest links between them.
    With `entity`: that one and its links. With `entity` and `other`: how the two relate (each
    link carries both roles and how many memories show them together). Names are matched as
    stored (KNOWN_PERSONS aliases are already resolved to one name). The graph is rebuilt by the
    nightly dream or memory_trigger(job='graph'), so the newest memories may not be in it yet.

    Returns `nodes` (name, mentions, usual roles, first and last seen) and `edges` (both names,
    both roles, count); `note` says why when there is nothing to show.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        params = parse(GraphQuery, given(entity=entity, other=other, top=top))
        if params.other is not None and params.entity is None:
            raise InvalidInput("other", "needs `entity` too: give both to see how two entities relate")
        return await offload(_graph, app, agent, params)


def _graph(app: AppContext, agent: str, params: GraphQuery) -> GraphResult:
    with app.db.read() as conn:
        nodes, edges = graph.read_graph(conn, agent, entity=params.entity, other=params.other, top=params.top)
    mode: GraphMode = "pair" if params.other is not None else "entity" if params.entity is not None else "top"
    note = None
    if not nodes:
        note = NOT_BUILT.format(job="graph") if mode == "top" else "no such entity in the graph (names match exactly)"
    return GraphResult(
        mode=mode,
        nodes=[
            GraphNode(
                name=n.name,
                mentions=n.mentions,
                known=n.known,
                usual_roles=list(n.usual_roles),
                first_seen=n.first_seen,
                last_seen=n.last_seen,
            )
            for n in nodes
        ],
        edges=[
            GraphEdge(
                source=e.source, target=e.target, source_role=e.source_role, target_role=e.target_role, count=e.count
            )
            for e in edges
        ],
        note=note,
    )


async def memory_attention_heatmap(ctx: Context, days: Days = None) -> HeatmapResult:
    """See what your retrievals have been landing on lately, and which parts of memory went unvisited.

    Every search, recall and per-turn retrieval hit is logged; this groups the hits of the last
    `days` by topic cluster and by soft (meaning) cluster: hits, share, a bar, mean similarity and
    sources per cluster, plus the "deserts" (clusters never lit). Use it to notice fixation or
    neglected areas.

    Returns `kinds` (topic and embedding), each with `rows` (cluster, hits, share, bar, mean
    similarity, sources) and `deserts`, plus the whole heatmap as `markdown`.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        params = parse(HeatmapQuery, given(days=days))
        return await offload(_heatmap, app, agent, params.days)


def _heatmap(app: AppContext, agent: str, days: int) -> HeatmapResult:
    heat = attention_heatmap(app.db, agent, days)
    return HeatmapResult(
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
        markdown=attention.to_markdown(heat),
    )


async def memory_soft_clusters(
    ctx: Context, label: Label = None, query: RouteQuery = None, limit: MemberLimit = None
) -> SoftClustersResult:
    """Browse your memories grouped by meaning (soft clusters: each memory sits in its 3 nearest).

    With no arguments: every cluster with its name, size and neighbouring clusters. With `label`:
    that cluster's most central memories (with their gesture) and its neighbours. With `query`:
    also which clusters that text would light up (its 3 nearest and their neighbours), useful to
    see where a question lands in your memory. Clusters are rebuilt nightly or by
    memory_trigger(job='recluster').

    Returns `clusters` (label, name, size, neighbours with shared counts), `members` for a
    `label` (narrative id, gesture, distance to the centre), `route` for a `query` (primary and
    neighbouring labels), and a `note` when nothing is built yet or the query cannot be embedded.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        params = parse(SoftClustersQuery, given(label=label, query=query, limit=limit))
        return await offload(_soft_clusters, app, agent, params)


def _neighbours(summary: SoftClusterSummary) -> list[Neighbour]:
    return [Neighbour(label=other, shared=shared) for other, shared in summary.neighbours]


def _soft_clusters(app: AppContext, agent: str, params: SoftClustersQuery) -> SoftClustersResult:
    vector, note = None, None
    if params.query is not None:
        # The query embedding is computed in the read path (DESIGN §3), before any transaction opens.
        try:
            vector = app.embedder.queries([params.query], timeout=app.settings.query_embedding_timeout)[0]
        except (EmbedderUnavailable, ConfigurationError) as exc:
            note = f"cannot route the query: the embedder is unavailable ({exc})"
    members: list[ClusterMember] = []
    with app.db.read() as conn:
        if params.label is not None:
            detail = clusters.read_soft_cluster(conn, agent, params.label, limit=params.limit)
            found = [detail.summary]
            gestures = load_narratives(conn, agent, [m[0] for m in detail.members])
            members = [
                ClusterMember(
                    narrative_id=nid,
                    rank=rank,
                    distance=distance,
                    gesture=gestures[nid].gesture if nid in gestures else "",
                )
                for nid, rank, distance in detail.members
            ]
        else:
            found = clusters.read_soft_clusters(conn, agent)
        routed = clusters.route_query(conn, agent, vector, app.embedder.model) if vector is not None else None
    if not found:
        note = note or NOT_BUILT.format(job="recluster")
    elif vector is not None and routed is None:
        note = "no soft clusters of the current embedding model yet: memory_trigger(job='recluster') builds them"
    return SoftClustersResult(
        clusters=[SoftCluster(label=s.label, name=s.name, size=s.size, neighbours=_neighbours(s)) for s in found],
        members=members,
        route=Route(primary=list(routed.primary), neighbours=list(routed.neighbours)) if routed is not None else None,
        note=note,
    )


async def memory_topics(ctx: Context, limit: TopicLimit = None, sample: Sample = None) -> TopicsResult:
    """List the recurring topics of your memories (keywords shared by several memories), largest first.

    Each topic comes with a few of its newest memories as examples. A keyword counts as a topic
    when at least 3 memories hold it and it is not so common that it says nothing. Topics are
    rebuilt nightly or by memory_trigger(job='recluster').

    Returns `topics` (keyword, label, size, sample memories with id and gesture) and their `count`.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        params = parse(TopicsQuery, given(limit=limit, sample=sample))
        return await offload(_topics, app, agent, params)


def _topics(app: AppContext, agent: str, params: TopicsQuery) -> TopicsResult:
    with app.db.read() as conn:
        found = clusters.read_topics(conn, agent, limit=params.limit, sample=params.sample)
        gestures = load_narratives(conn, agent, sorted({i for t in found for i in t.narrative_ids}))
    topics = [
        Topic(
            keyword=t.keyword,
            label=t.label,
            size=t.size,
            samples=[TopicSample(id=i, gesture=gestures[i].gesture) for i in t.narrative_ids if i in gestures],
        )
        for t in found
    ]
    return TopicsResult(count=len(topics), topics=topics, note=None if topics else NOT_BUILT.format(job="recluster"))


async def memory_trigger(ctx: Context, job: Job) -> TriggerResult:
    """Start a memory-organizing job for yourself now instead of waiting for the nightly dream.

    Jobs: 'recluster' rebuilds topics and soft clusters, 'refresh' recomputes recurrence and
    weights, 'graph' rebuilds the entity graph, 'scan' reports conversation not yet turned into
    memories. The job runs in the background; this returns its task id at once. Its progress and
    figures appear in memory_status (dream_runs). Refused while your nightly dream is running
    (it runs every one of these anyway): try again later.

    Returns the `task_id` (also visible in Flower), the `job` and your `agent`.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        params = parse(TriggerQuery, given(job=job))
        task_id = await offload(app.dispatcher.enqueue_trigger, agent, params.job)
        if task_id is None:
            raise BrokerUnavailable("the task queue is unreachable, so nothing was started; try again later")
        return TriggerResult(agent=agent, job=params.job, task_id=task_id)


def register(server: MCPServer) -> None:
    server.add_tool(memory_graph, title="Entity graph", annotations=READ)
    server.add_tool(memory_attention_heatmap, title="Attention heatmap", annotations=READ)
    server.add_tool(memory_soft_clusters, title="Soft clusters", annotations=READ)
    server.add_tool(memory_topics, title="Topics", annotations=READ)
    server.add_tool(memory_trigger, title="Organize memory now", annotations=TRIGGER)
