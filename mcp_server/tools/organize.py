"""Reads of what the dream builds: memory_graph, memory_attention_heatmap, memory_soft_clusters and memory_topics."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from mcp_server.models_organize import GraphResult, HeatmapResult, SoftClustersResult, TopicsResult
from mcp_server.tools._edge import READ, app_of, given, offload, spec, tool_errors
from tideline_core.domain.inputs import GraphQuery, HeatmapQuery, SoftClustersQuery, TopicsQuery, parse
from tideline_core.dream import STAGES

Entity = Annotated[Any, spec(GraphQuery, "entity", "An entity's name: its node and its edges.")]
Other = Annotated[Any, spec(GraphQuery, "other", "With `entity`: only the edges between the two.")]
Top = Annotated[Any, spec(GraphQuery, "top", "How many nodes and edges at most.")]
Days = Annotated[Any, spec(HeatmapQuery, "days", "How many days back.")]
Label = Annotated[Any, spec(SoftClustersQuery, "label", "A cluster's label (from the list): members, neighbours.")]
RouteQuery = Annotated[Any, spec(SoftClustersQuery, "query", "Text to route: which clusters it would light up.")]
MemberLimit = Annotated[Any, spec(SoftClustersQuery, "limit", "Members shown for `label`, 1–200 (default 20).")]
TopicLimit = Annotated[Any, spec(TopicsQuery, "limit", "How many topics, largest first.")]
Sample = Annotated[Any, spec(TopicsQuery, "sample", "Example memories per topic.")]


async def memory_graph(ctx: Context, entity: Entity = None, other: Other = None, top: Top = None) -> GraphResult:
    """See who appears in your memories, in which roles and with whom: the most mentioned, one `entity`, or how
    `entity` and `other` relate (rebuilt nightly). Returns `nodes` and `edges`.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        query = parse(GraphQuery, given(entity=entity, other=other, top=top))
        view = await offload(app.service.graph, agent, query)
    return GraphResult.of(view)


async def memory_attention_heatmap(ctx: Context, days: Days = None) -> HeatmapResult:
    """See what your retrievals landed on over the last `days`, by cluster, to notice fixation or neglect. Returns hits
    per cluster, the `deserts` never lit, and `markdown`.
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
    """Browse memories grouped by meaning: every cluster, one `label`'s members, or where a `query` lands (rebuilt
    nightly). Returns `clusters`, `members` or `route`.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        params = parse(SoftClustersQuery, given(label=label, query=query, limit=limit))
        view = await offload(app.service.soft_clusters, agent, params)
    return SoftClustersResult.of(view)


async def memory_topics(ctx: Context, limit: TopicLimit = None, sample: Sample = None) -> TopicsResult:
    """List the recurring topics of your memories, largest first, with example memories (rebuilt nightly). Returns
    `topics`.
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
