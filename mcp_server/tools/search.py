"""The read path shared by memory_search and context_search: search, then enqueue attention logging."""

from __future__ import annotations

from mcp_server.context import AppContext
from mcp_server.models import Hit, SearchResult
from tideline_core.inputs import SearchIn


def run_search(app: AppContext, agent: str, params: SearchIn) -> SearchResult:
    """Search the agent's rows (sync: runs on a worker thread) and hand narrative hits to attention logging.

    The server never writes attention itself (DESIGN §3): the hits go to the ingest queue, and a
    broker that is down only costs those log entries, never the answer.
    """
    outcome = app.search.search(agent, params)
    attended = [
        # The cosine similarity when the dense signal saw the hit; otherwise the fused score (capped at 1) stands in.
        (hit.id, hit.similarity if hit.similarity is not None else min(1.0, hit.score))
        for hit in outcome.hits
        if hit.kind == "narrative"
    ]
    if attended:
        app.dispatcher.enqueue_attention(agent, attended, "search")
    return SearchResult(
        query=params.query,
        mode=outcome.mode,
        degraded=outcome.degraded,
        terms=list(outcome.terms),
        dates=list(outcome.dates),
        embedded=list(outcome.embedded),
        hits=[Hit.of(h) for h in outcome.hits],
    )
