"""The map: the attention heatmap with its deserts, the soft clusters and their adjacency, topics, the entity graph."""

from __future__ import annotations

from starlette.responses import Response

from tideline_console import drawing
from tideline_console.forms import number
from tideline_console.visit import PageFunction, Visit
from tideline_core.domain.inputs import GraphQuery, SoftClustersQuery, TopicsQuery

HEAT_DAYS = 30


async def atlas(visit: Visit) -> Response:
    days = number(visit.arg("days"), "days") or HEAT_DAYS
    service = visit.service
    heat = await visit.call(service.heatmap, visit.agent, days)
    clusters = await visit.call(service.soft_clusters, visit.agent, SoftClustersQuery())
    topics = await visit.call(service.topics, visit.agent, TopicsQuery())
    graph = await visit.call(service.graph, visit.agent, GraphQuery())

    pictures = [
        (
            "Attention",
            f"where the last {days} days' retrieval hits landed, and the deserts never lit",
            drawing.heatmap_svg(heat),
        ),
        ("Soft clusters", "each cluster by size, with its neighbours", drawing.clusters_svg(clusters)),
        ("Topics", "the largest topics", drawing.topics_svg(topics)),
        ("Entity graph", "who and what the memories connect", drawing.entity_graph_svg(graph)),
    ]
    return visit.render("map.html", pictures=pictures, days=days)


ROUTES: list[tuple[str, list[str], PageFunction, bool]] = [("/map", ["GET"], atlas, False)]
