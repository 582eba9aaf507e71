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
from tideline_core.domain.inputs import (
    MAX_CONVERSATION,
    MAX_LINE,
    AmendmentIn,
    NarrativeIn,
    RecallQuery,
    SearchIn,
    parse,
)

Gesture = Annotated[str, spec(NarrativeIn, "gesture", "What happened, in one sentence that keeps its tone.")]
Background = Annotated[str, spec(NarrativeIn, "context", "Background: what led to it, what was going on.")]
Moment = Annotated[str, spec(NarrativeIn, "moment", "The concrete moment or detail that made it stick.")]
Direction = Annotated[str, spec(NarrativeIn, "cognition_direction", "Where your thinking went because of it.")]
Importance = Annotated[Any, spec(NarrativeIn, "importance", "How much it matters.")]
Emotional = Annotated[Any, spec(NarrativeIn, "emotional", "Emotional intensity.")]
Unresolved = Annotated[Any, spec(NarrativeIn, "unresolved", "How open it still is.")]
Tags = Annotated[Any, spec(NarrativeIn, "tags", "Topic tags; tags that recur raise recurrence.")]
EntitiesRole = Annotated[
    str, spec(NarrativeIn, "entities_role", "Who did what, e.g. 'Alice=judged+executed; Bob=reviewed'.")
]
Related = Annotated[Any, spec(NarrativeIn, "related_entities", "Other people or things involved.")]
SourceLinks = Annotated[Any, spec(NarrativeIn, "source_links", "Ids of the turns (context_record) it came from.")]
NarrativeTypeArg = Annotated[
    Any, spec(NarrativeIn, "narrative_type", "What kind of memory (digest: a session's summary).")
]
OccurredAt = Annotated[Any, spec(NarrativeIn, "occurred_at", "When it happened (default: now).", DATE_SCHEMA)]

Limit = Annotated[Any, spec(RecallQuery, "limit", "")]
TypeFilter = Annotated[Any, spec(RecallQuery, "narrative_type", "Only this type.")]
TagFilter = Annotated[Any, spec(RecallQuery, "tags", "Only memories with any of these tags.")]
Since = Annotated[Any, spec(RecallQuery, "since", "Happened at or after this time.", DATE_SCHEMA)]
Until = Annotated[Any, spec(RecallQuery, "until", "Happened at or before this time.", DATE_SCHEMA)]
Order = Annotated[Any, spec(RecallQuery, "order", "Newest or heaviest first.")]

Query = Annotated[
    str, spec(SearchIn, "query", "What to look for, in any language; word* asks for the words it begins.")
]
Kinds = Annotated[Any, spec(SearchIn, "kinds", "Memories and turns, memories only, or turns only.")]
Mode = Annotated[Any, spec(SearchIn, "mode", "words + meaning, words only, or meaning only.")]
SearchLimit = Annotated[Any, spec(SearchIn, "limit", "")]
RECENT_TURNS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_CONVERSATION,
    "items": {
        "type": "object",
        "properties": {
            "speaker": {"type": "string", "maxLength": 128, "description": "who said it"},
            "text": {"type": "string", "minLength": 1, "maxLength": MAX_LINE, "description": "what was said"},
            "role": {
                "type": "string",
                "enum": ["user", "assistant", "system", "tool"],
                "description": "assistant for your own lines",
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
        "This conversation's last lines, oldest first (query may then be empty).",
        RECENT_TURNS_SCHEMA,
    ),
]
SearchSince = Annotated[Any, spec(SearchIn, "since", "At or after this time.", DATE_SCHEMA)]
SearchUntil = Annotated[Any, spec(SearchIn, "until", "At or before this time.", DATE_SCHEMA)]

NarrativeId = Annotated[
    Any, spec(AmendmentIn, "narrative_id", "The id of the memory to annotate (from memory_write or a search).")
]
Note = Annotated[str, spec(AmendmentIn, "note", "The correction or afterthought to attach.")]


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
    """Remember something worth keeping beyond this session, as one memory in your own words (scores 1–5, 3
    when unsure). Returns its id, weight and recurrence; it is keyword-searchable at once, by meaning once embedded.
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
    """List your memories newest first (or by weight), filtered by type, tags and time, to look back rather than search
    for words. Returns them in full, with amendments.
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
    """Search your memories and past conversation by words and meaning (Chinese or English) before answering about
    the past; mid-conversation, add recent_turns. Returns hits best first with the signals that matched;
    `degraded` when keyword-only.
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
    """Attach a correction or afterthought to one of your memories (never rewritten): the note is shown with it from
    then on. Returns the amendment's id.
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
