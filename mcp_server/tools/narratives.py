"""Narrative memory tools: memory_write, memory_recall, memory_search, memory_amend."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from mcp_server.models import Amended, Narrative, NarrativeWritten, Recall, SearchResult
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
from tideline_core.inputs import MAX_CONVERSATION, MAX_LINE, AmendmentIn, NarrativeIn, RecallQuery, SearchIn, parse

Gesture = Annotated[
    str, spec(NarrativeIn, "gesture", "What happened, in one sentence that keeps its tone (required, ≤ 2000 chars).")
]
Background = Annotated[
    str, spec(NarrativeIn, "context", "Background: what led to it, what was going on (≤ 20000 chars).")
]
Moment = Annotated[
    str, spec(NarrativeIn, "moment", "The concrete moment or detail that made it stick (≤ 20000 chars).")
]
Direction = Annotated[
    str, spec(NarrativeIn, "cognition_direction", "Where your thinking went because of it (≤ 20000 chars).")
]
Importance = Annotated[Any, spec(NarrativeIn, "importance", "How much it matters, integer 1–5 (default 3).")]
Emotional = Annotated[Any, spec(NarrativeIn, "emotional", "Emotional intensity, integer 1–5 (default 3).")]
Unresolved = Annotated[Any, spec(NarrativeIn, "unresolved", "How open it still is, integer 1–5 (default 3).")]
Tags = Annotated[
    Any, spec(NarrativeIn, "tags", "Topic tags, a list of strings (≤ 32 tags, each ≤ 64 chars); drive recurrence.")
]
EntitiesRole = Annotated[
    str, spec(NarrativeIn, "entities_role", "Who did what, e.g. 'Alice=judged+executed; Bob=reviewed'.")
]
Related = Annotated[
    Any, spec(NarrativeIn, "related_entities", "Other people or things involved, a list of names (≤ 64).")
]
SourceLinks = Annotated[
    Any, spec(NarrativeIn, "source_links", "Ids of the context turns (from context_record) this memory came from.")
]
NarrativeTypeArg = Annotated[
    Any,
    spec(
        NarrativeIn,
        "narrative_type",
        "One of event, reflection, insight, decision, dream, digest (a session's summary), other (default event).",
    ),
]
OccurredAt = Annotated[Any, spec(NarrativeIn, "occurred_at", "When it happened (default: now).", DATE_SCHEMA)]

Limit = Annotated[Any, spec(RecallQuery, "limit", "How many to return, integer 1–100 (default 10).")]
TypeFilter = Annotated[
    Any,
    spec(RecallQuery, "narrative_type", "Only this type: event, reflection, insight, decision, dream, digest, other."),
]
TagFilter = Annotated[
    Any, spec(RecallQuery, "tags", "Only memories carrying at least one of these tags (a list of strings).")
]
Since = Annotated[Any, spec(RecallQuery, "since", "Only memories that happened at or after this instant.", DATE_SCHEMA)]
Until = Annotated[
    Any, spec(RecallQuery, "until", "Only memories that happened at or before this instant.", DATE_SCHEMA)
]
Order = Annotated[
    Any, spec(RecallQuery, "order", "'recent' (newest first, default) or 'weight' (most important first).")
]

Query = Annotated[
    str, spec(SearchIn, "query", "What to look for, in any language; plain text (quotes, *, AND, % are literal).")
]
Kinds = Annotated[
    Any, spec(SearchIn, "kinds", "'all' (default), 'narratives' (memories only) or 'context' (raw turns only).")
]
Mode = Annotated[
    Any, spec(SearchIn, "mode", "'hybrid' (default: words + meaning), 'keyword' (exact words) or 'dense' (meaning).")
]
SearchLimit = Annotated[Any, spec(SearchIn, "limit", "How many hits, integer 1–100 (default 10).")]
RECENT_TURNS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_CONVERSATION,
    "items": {
        "type": "object",
        "properties": {
            "speaker": {"type": "string", "maxLength": 128, "description": "who said it, e.g. the user's name"},
            "text": {"type": "string", "minLength": 1, "maxLength": MAX_LINE, "description": "what was said"},
            "role": {
                "type": "string",
                "enum": ["user", "assistant", "system", "tool"],
                "description": "'assistant' for your own lines, otherwise 'user' (default)",
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    },
}
RecentTurns = Annotated[
    Any,
    spec(
        SearchIn,
        "conversation",
        "Optional: the last lines of the current conversation, oldest first (at most 20, each at most 2000 "
        "characters), as {speaker, text, role}. Give them to recall what the conversation is about without writing "
        "a query: the other party's lines and the newest lines count most. query may then be empty.",
        RECENT_TURNS_SCHEMA,
    ),
]
SearchSince = Annotated[Any, spec(SearchIn, "since", "Only results at or after this instant.", DATE_SCHEMA)]
SearchUntil = Annotated[Any, spec(SearchIn, "until", "Only results at or before this instant.", DATE_SCHEMA)]

NarrativeId = Annotated[
    Any, spec(AmendmentIn, "narrative_id", "The id of the memory to annotate (from memory_write or a search).")
]
Note = Annotated[str, spec(AmendmentIn, "note", "The correction or afterthought to attach (≤ 20000 chars).")]


async def memory_write(
    ctx: Context,
    gesture: Gesture,
    context: Background = "",
    moment: Moment = "",
    cognition_direction: Direction = "",
    importance: Importance = 3,
    emotional: Emotional = 3,
    unresolved: Unresolved = 3,
    tags: Tags = None,
    entities_role: EntitiesRole = "",
    related_entities: Related = None,
    source_links: SourceLinks = None,
    narrative_type: NarrativeTypeArg = "event",
    occurred_at: OccurredAt = None,
    idempotency_key: IdempotencyKey | None = None,
) -> NarrativeWritten:
    """Remember something that happened, as a structured narrative memory.

    Use it when an exchange, decision, realisation or feeling is worth keeping beyond this session:
    one memory per moment, written in your own words. Give `gesture` (required) and whatever else
    you know; scores are integers 1–5 (3 when unsure). Tags that recur raise the memory's recurrence.
    The memory is stored durably before this returns and is keyword-searchable at once; it becomes
    searchable by meaning a moment later, when a background worker has embedded it.

    Returns the new memory's id, its weight (0.2–1.0) and recurrence (1–5). On bad input nothing is
    stored and the error names the field and the rule.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        data = parse(
            NarrativeIn,
            given(
                gesture=gesture,
                context=context,
                moment=moment,
                cognition_direction=cognition_direction,
                importance=importance,
                emotional=emotional,
                unresolved=unresolved,
                tags=tags,
                entities_role=entities_role,
                related_entities=related_entities,
                source_links=source_links,
                narrative_type=narrative_type,
                occurred_at=occurred_at,
            ),
        )
        written = await offload(app.service.write_narrative, agent, data, key=write_key(idempotency_key))
    return NarrativeWritten(id=written.id, weight=written.weight, recurrence=written.recurrence, queued=written.queued)


async def memory_recall(
    ctx: Context,
    limit: Limit = 10,
    narrative_type: TypeFilter = None,
    tags: TagFilter = None,
    since: Since = None,
    until: Until = None,
    order: Order = "recent",
) -> Recall:
    """List your narrative memories, newest first (or heaviest first with order='weight').

    Use it to look back over a period, a kind of memory, or a topic by tag, when you are not
    searching for particular words (use memory_search for that). Filters combine: narrative_type,
    tags (any of them), since/until on when it happened.

    Returns the memories in full: text fields, scores, weight, tags, source links and amendments.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        query = parse(
            RecallQuery,
            given(limit=limit, narrative_type=narrative_type, tags=tags, since=since, until=until, order=order),
        )
        records = await offload(app.service.recall, agent, query)
    return Recall(count=len(records), narratives=[Narrative.of(r) for r in records])


async def memory_search(
    ctx: Context,
    query: Query = "",
    kinds: Kinds = "all",
    mode: Mode = "hybrid",
    since: SearchSince = None,
    until: SearchUntil = None,
    limit: SearchLimit = 10,
    recent_turns: RecentTurns = None,
) -> SearchResult:
    """Search everything you remember — narrative memories and raw conversation — by words and meaning.

    Use it before answering about the past ("what did we decide about X", "when did I last talk to
    Y"). Works in Chinese and English, including two-character words. The query is plain text
    (quotes, AND, NEAR( and % are searched for literally), with one mark: a word ending in * asks
    for the words it begins (swim* finds swimming). Narrow with kinds, since and until.
    Mid-conversation, pass recent_turns (the last few lines, yours with role 'assistant') instead of
    or besides a query, to bring up memories that fit what is being talked about.

    Returns hits best first, each with its kind (narrative or context), id, text, time and the
    signals that matched. If semantic search is unavailable, `degraded` says so and the hits are
    keyword-only.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        params = parse(
            SearchIn,
            given(
                query=query, kinds=kinds, mode=mode, since=since, until=until, limit=limit, conversation=recent_turns
            ),
            names={"conversation": "recent_turns"},
        )
        outcome = await offload(app.service.search, agent, params)
    return SearchResult.of(outcome)


async def memory_amend(
    ctx: Context, narrative_id: NarrativeId, note: Note, idempotency_key: IdempotencyKey | None = None
) -> Amended:
    """Attach a note to one of your memories: a correction, an afterthought, how it turned out.

    Memories are never rewritten; amendments are appended and shown with the memory from then on.
    Use the memory's id from memory_write, memory_recall or memory_search.

    Returns the amendment's id. An id that is not one of your memories is an error.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        data = parse(AmendmentIn, given(narrative_id=narrative_id, note=note))
        amendment_id = await offload(app.service.amend, agent, data, key=write_key(idempotency_key))
    return Amended(id=amendment_id, narrative_id=data.narrative_id)


def register(server: MCPServer) -> None:
    server.add_tool(memory_write, title="Write a memory", annotations=WRITE)
    server.add_tool(memory_recall, title="Recall recent memories", annotations=READ)
    server.add_tool(memory_search, title="Search memory", annotations=READ)
    server.add_tool(memory_amend, title="Amend a memory", annotations=WRITE)
