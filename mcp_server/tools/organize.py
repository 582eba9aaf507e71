"""Reads of what the dream builds: memory_graph, memory_attention_heatmap, memory_soft_clusters and memory_topics."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from mcp_server.models_organize import GraphResult, HeatmapResult, SoftClustersResult, TopicsResult
from mcp_server.tools._edge import READ, app_of, given, offload, spec, tool_errors
from tideline_core.dream import STAGES
from tideline_core.inputs import GraphQuery, HeatmapQuery, SoftClustersQuery, TopicsQuery, parse

Entity = Annotated[Any, spec(GraphQuery, "entity", "An entity's name: its node and its edges.")]
Other = Annotated[Any, spec(GraphQuery, "other", "With `entity`: only the edges between the two.")]
Top = Annotated[Any, spec(GraphQuery, "top", "How many nodes and edges at most, integer 1–200 (default 20).")]
Days = Annotated[Any, spec(HeatmapQuery, "days", "How many days back, integer 1–365 (default 7).")]
Label = Annotated[Any, spec(SoftClustersQuery, "label", "A cluster's label (from the list): members, neighbours.")]
RouteQuery = Annotated[Any, spec(SoftClustersQuery, "query", "Text to route: which clusters it would light up.")]
MemberLimit = Annotated[Any, spec(SoftClustersQuery, "limit", "Members shown for `label`, 1–200 (default 20).")]
TopicLimit = Annotated[Any, spec(TopicsQuery, "limit", "How many topics, largest first, integer 1–200 (default 25).")]
Sample = Annotated[Any, spec(TopicsQuery, "sample", "Example memories per topic, integer 0–20 (default 3).")]


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
        query = parse(GraphQuery, given(entity=entity, other=other, top=top))
        view = await offload(app.service.graph, agent, query)
    return GraphResult.of(view)


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
        query = parse(HeatmapQuery, given(days=days))
        heat = await offload(app.service.heatmap, agent, query.days)
    return HeatmapResult.of_heatmap(query.days, heat)


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
        view = await offload(app.service.soft_clusters, agent, params)
    return SoftClustersResult.of(view)


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
        query = parse(TopicsQuery, given(limit=limit, sample=sample))
        view = await offload(app.service.topics, agent, query)
    return TopicsResult.of(view)


TRIGGER_DESCRIPTION = (
    "Start a memory-organizing stage for yourself now instead of waiting for the nightly dream.\n\n"
    "Stages:\n"
    + "".join(f"- {stage.name}: {stage.summary}\n" for stage in STAGES)
    + "\nThe stage runs in the background; this returns its task id at once. Its progress and figures appear in "
    "memory_status (dream_runs). Refused while your nightly dream is running (it runs every one of these "
    "anyway): try again later.\n\n"
    "Returns the `task_id` (also visible in Flower), the `job` and your `agent`."
)


def register(server: MCPServer) -> None:
    server.add_tool(memory_graph, title="Entity graph", annotations=READ)
    server.add_tool(memory_attention_heatmap, title="Attention heatmap", annotations=READ)
    server.add_tool(memory_soft_clusters, title="Soft clusters", annotations=READ)
    server.add_tool(memory_topics, title="Topics", annotations=READ)
