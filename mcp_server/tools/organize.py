"""Reads of what the dream builds: memory_graph, memory_attention_heatmap, memory_soft_clusters and memory_topics."""

from __future__ import annotations

from mcp.server import MCPServer

from mcp_server.context import AppContext
from mcp_server.models_organize import GraphResult, HeatmapResult, SoftClustersResult, TopicsResult
from mcp_server.tools._edge import READ, offload, operation
from tideline_core.domain.inputs import GraphQuery, HeatmapQuery, SoftClustersQuery, TopicsQuery


@operation(GraphQuery)
async def memory_graph(app: AppContext, agent: str, query: GraphQuery) -> GraphResult:
    """See who appears in your memories, in which roles and with whom: the most mentioned, one `entity`, or how
    `entity` and `other` relate (rebuilt nightly). Returns nodes and edges.
    """
    view = await offload(app.service.graph, agent, query)
    return GraphResult.of(view)


@operation(HeatmapQuery)
async def memory_attention_heatmap(app: AppContext, agent: str, query: HeatmapQuery) -> HeatmapResult:
    """See what your retrievals landed on over the last `days`, by cluster, to notice fixation or neglect. Returns hits
    per cluster, the deserts never lit, and markdown.
    """
    heat = await offload(app.service.heatmap, agent, query.days)
    return HeatmapResult.of_heatmap(query.days, heat)


@operation(SoftClustersQuery)
async def memory_soft_clusters(app: AppContext, agent: str, params: SoftClustersQuery) -> SoftClustersResult:
    """Browse memories grouped by meaning: every cluster, one `label`'s members, or where a `query` lands (rebuilt
    nightly). Returns clusters, members or route.
    """
    view = await offload(app.service.soft_clusters, agent, params)
    return SoftClustersResult.of(view)


@operation(TopicsQuery)
async def memory_topics(app: AppContext, agent: str, query: TopicsQuery) -> TopicsResult:
    """List the recurring topics of your memories, largest first, with example memories (rebuilt nightly). Returns
    topics.
    """
    view = await offload(app.service.topics, agent, query)
    return TopicsResult.of(view)


def register(server: MCPServer) -> None:
    server.add_tool(memory_graph, title="Entity graph", annotations=READ)
    server.add_tool(memory_attention_heatmap, title="Attention heatmap", annotations=READ)
    server.add_tool(memory_soft_clusters, title="Soft clusters", annotations=READ)
    server.add_tool(memory_topics, title="Topics", annotations=READ)
