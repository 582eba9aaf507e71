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
from tideline_core.inputs import ContextTurnIn, SearchIn, TimelineQuery, parse

Role = Annotated[Any, spec(ContextTurnIn, "role", "Who spoke: user, assistant, system or tool.")]
Content = Annotated[str, spec(ContextTurnIn, "content", "The full text of the turn, verbatim (≤ 100000 chars).")]
SessionId = Annotated[str, spec(ContextTurnIn, "session_id", "The conversation this turn belongs to (≤ 256 chars).")]
Speaker = Annotated[str, spec(ContextTurnIn, "speaker", "The speaker's name, if not just the role (≤ 128 chars).")]
Metadata = Annotated[
    Any, spec(ContextTurnIn, "metadata", "Extra facts about the turn, a JSON object (≤ 16 KiB as JSON).")
]
CreatedAt = Annotated[Any, spec(ContextTurnIn, "created_at", "When the turn was said (default: now).", DATE_SCHEMA)]

Query = Annotated[
    str, spec(SearchIn, "query", "What to look for in past conversation; plain text (quotes, *, AND, % are literal).")
]
Mode = Annotated[
    Any, spec(SearchIn, "mode", "'hybrid' (default: words + meaning), 'keyword' (exact words) or 'dense' (meaning).")
]
SearchLimit = Annotated[Any, spec(SearchIn, "limit", "How many turns, integer 1–100 (default 10).")]
SearchSince = Annotated[Any, spec(SearchIn, "since", "Only turns said at or after this instant.", DATE_SCHEMA)]
SearchUntil = Annotated[Any, spec(SearchIn, "until", "Only turns said at or before this instant.", DATE_SCHEMA)]

TimelineSession = Annotated[
    str, spec(TimelineQuery, "session_id", "The session to show in order; empty for the latest turns of all sessions.")
]
TimelineLimit = Annotated[Any, spec(TimelineQuery, "limit", "How many turns, integer 1–500 (default 50).")]
TimelineSince = Annotated[Any, spec(TimelineQuery, "since", "Only turns said at or after this instant.", DATE_SCHEMA)]
TimelineUntil = Annotated[Any, spec(TimelineQuery, "until", "Only turns said at or before this instant.", DATE_SCHEMA)]


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
    """Record one raw conversation turn, verbatim, so it can be searched and distilled later.

    Use it for every turn worth keeping word for word (the nightly DREAM turns these into narrative
    memories). Keep one session_id per conversation. Stored durably before this returns and
    keyword-searchable at once; searchable by meaning once a worker has embedded it.

    Returns the turn's id (use it in memory_write's source_links). Nothing is stored on bad input.
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
    """Search raw conversation turns only (what was actually said), by words and meaning.

    Use it to find the exact wording of something said, or a conversation you half remember.
    For distilled memories as well, use memory_search. Chinese and English both work; the query is
    plain text, and a word ending in * asks for the words it begins.

    Returns matching turns best first with their session id, speaker and time; `degraded` is set
    when semantic search was unavailable and the hits are keyword-only.
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
    """Read conversation turns in the order they were said.

    With session_id: that session from its start, up to limit turns (to read on, pass the last
    turn's created_at as since; that turn comes again). Without: the latest turns across all
    sessions. Use it to reread a conversation around a search hit (take the hit's session_id) or
    to see what was said most recently.

    Returns the turns oldest first, each with id, role, speaker, content, metadata and time.
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
