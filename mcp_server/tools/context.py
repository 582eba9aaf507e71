"""Raw conversation tools: context_record, context_search, context_timeline."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from mcp_server.models import SearchResult, Timeline, Turn, TurnRecorded
from mcp_server.tools._edge import (
    DATE_SCHEMA,
    READ,
    WRITE,
    IdempotencyKey,
    app_of,
    given,
    offload,
    spec,
    tool_errors,
    write_key,
)
from tideline_core.domain.inputs import ContextTurnIn, SearchIn, TimelineQuery, parse

Role = Annotated[Any, spec(ContextTurnIn, "role", "Who spoke.")]
Content = Annotated[str, spec(ContextTurnIn, "content", "The full text of the turn, verbatim.")]
SessionId = Annotated[str, spec(ContextTurnIn, "session_id", "The conversation this turn belongs to.")]
Speaker = Annotated[str, spec(ContextTurnIn, "speaker", "The speaker's name, if not just the role.")]
Metadata = Annotated[Any, spec(ContextTurnIn, "metadata", "Extra facts about the turn, a JSON object.")]
CreatedAt = Annotated[Any, spec(ContextTurnIn, "created_at", "When the turn was said (default: now).", DATE_SCHEMA)]

Query = Annotated[
    str, spec(SearchIn, "query", "What to look for in past conversation; word* asks for the words it begins.")
]
Mode = Annotated[Any, spec(SearchIn, "mode", "words + meaning, words only, or meaning only.")]
SearchLimit = Annotated[Any, spec(SearchIn, "limit", "")]
SearchSince = Annotated[Any, spec(SearchIn, "since", "Said at or after this time.", DATE_SCHEMA)]
SearchUntil = Annotated[Any, spec(SearchIn, "until", "Said at or before this time.", DATE_SCHEMA)]

TimelineSession = Annotated[str, spec(TimelineQuery, "session_id", "The session to read; empty for the latest of all.")]
TimelineLimit = Annotated[Any, spec(TimelineQuery, "limit", "")]
TimelineSince = Annotated[Any, spec(TimelineQuery, "since", "Said at or after this time.", DATE_SCHEMA)]
TimelineUntil = Annotated[Any, spec(TimelineQuery, "until", "Said at or before this time.", DATE_SCHEMA)]


async def context_record(
    ctx: Context,
    role: Role,
    content: Content,
    session_id: SessionId = "",
    speaker: Speaker = "",
    metadata: Metadata = None,
    created_at: CreatedAt = None,
    idempotency_key: IdempotencyKey | None = None,
) -> TurnRecorded:
    """Record one conversation turn verbatim, one session_id per conversation, for search and the nightly dream.
    Returns the turn's id (for memory_write's source_links).
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        turn = parse(
            ContextTurnIn,
            given(
                role=role,
                content=content,
                session_id=session_id,
                speaker=speaker,
                metadata=metadata,
                created_at=created_at,
            ),
        )
        recorded = await offload(app.service.record_turns, agent, [turn], key=write_key(idempotency_key))
    return TurnRecorded(id=recorded.ids[0], session_id=turn.session_id, queued=recorded.queued)


async def context_search(
    ctx: Context,
    query: Query,
    mode: Mode = "hybrid",
    since: SearchSince = None,
    until: SearchUntil = None,
    limit: SearchLimit = 10,
) -> SearchResult:
    """Search only what was actually said (raw turns) by words and meaning, for exact wording or a half-remembered
    conversation. Returns turns best first with session, speaker and time.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        params = parse(SearchIn, given(query=query, kinds="context", mode=mode, since=since, until=until, limit=limit))
        outcome = await offload(app.service.search, agent, params)
    return SearchResult.of(outcome)


async def context_timeline(
    ctx: Context,
    session_id: TimelineSession = "",
    limit: TimelineLimit = 50,
    since: TimelineSince = None,
    until: TimelineUntil = None,
) -> Timeline:
    """Read turns in the order said: one session from its start (page on with since = the last created_at), or the
    latest of every session. Returns them oldest first.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        query = parse(TimelineQuery, given(session_id=session_id, limit=limit, since=since, until=until))
        records = await offload(app.service.timeline, agent, query)
    return Timeline(session_id=query.session_id or None, count=len(records), turns=[Turn.of(t) for t in records])


def register(server: MCPServer) -> None:
    server.add_tool(context_record, title="Record a conversation turn", annotations=WRITE)
    server.add_tool(context_search, title="Search past conversation", annotations=READ)
    server.add_tool(context_timeline, title="Read a conversation in order", annotations=READ)
