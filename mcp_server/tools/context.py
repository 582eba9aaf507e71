"""Raw conversation tools: context_record, context_search, context_timeline."""

from __future__ import annotations

from mcp.server import MCPServer

from mcp_server.context import AppContext
from mcp_server.models import SearchResult, Timeline, Turn, TurnRecorded
from mcp_server.tools._edge import READ, WRITE, offload, operation
from tideline_core.domain.inputs import ContextTurnIn, SearchIn, TimelineQuery


@operation(ContextTurnIn, keyed=True)
async def context_record(app: AppContext, agent: str, turn: ContextTurnIn, key: str | None) -> TurnRecorded:
    """Record one conversation turn verbatim, one session_id per conversation, for search and the nightly dream.
    Returns the turn's id (for memory_write's source_links).
    """
    recorded = await offload(app.service.record_turns, agent, [turn], key=key)
    return TurnRecorded(id=recorded.ids[0], session_id=turn.session_id, queued=recorded.queued)


@operation(
    SearchIn, fields=("query", "mode", "since", "until", "limit"), required=("query",), fixed={"kinds": "context"}
)
async def context_search(app: AppContext, agent: str, params: SearchIn) -> SearchResult:
    """Search only what was actually said (raw turns) by words and meaning, for exact wording or a half-remembered
    conversation. Returns turns best first with session, speaker and time.
    """
    outcome = await offload(app.service.search, agent, params)
    return SearchResult.of(outcome)


@operation(TimelineQuery)
async def context_timeline(app: AppContext, agent: str, query: TimelineQuery) -> Timeline:
    """Read turns in the order said: one session from its start (page on with since = the last created_at), or the
    latest of every session. Returns them oldest first.
    """
    records = await offload(app.service.timeline, agent, query)
    return Timeline(session_id=query.session_id or None, count=len(records), turns=[Turn.of(t) for t in records])


def register(server: MCPServer) -> None:
    server.add_tool(context_record, title="Record a conversation turn", annotations=WRITE)
    server.add_tool(context_search, title="Search past conversation", annotations=READ)
    server.add_tool(context_timeline, title="Read a conversation in order", annotations=READ)
