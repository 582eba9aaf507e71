"""Narrative memory tools: memory_write, memory_recall, memory_search, memory_amend."""

from __future__ import annotations

from mcp.server import MCPServer

from mcp_server.context import AppContext
from mcp_server.models import Amended, Narrative, NarrativeWritten, Recall, SearchResult
from mcp_server.tools._edge import READ, RECENT_TURNS, WRITE, offload, operation
from tideline_core.domain.inputs import AmendmentIn, NarrativeIn, RecallQuery, SearchIn


@operation(NarrativeIn, keyed=True)
async def memory_write(app: AppContext, agent: str, data: NarrativeIn, key: str | None) -> NarrativeWritten:
    """Remember something worth keeping beyond this session, as one memory in your own words (scores 1–5, 3
    when unsure). Returns its id, weight and recurrence; keyword-searchable at once, by meaning once embedded.
    """
    written = await offload(app.service.write_narrative, agent, data, key=key)
    return NarrativeWritten(id=written.id, weight=written.weight, recurrence=written.recurrence, queued=written.queued)


@operation(RecallQuery)
async def memory_recall(app: AppContext, agent: str, query: RecallQuery) -> Recall:
    """List your memories newest first (or by weight), filtered by type, tags and time, to look back rather than search
    for words. Returns them in full, with amendments.
    """
    records = await offload(app.service.recall, agent, query)
    return Recall(count=len(records), narratives=[Narrative.of(r) for r in records])


@operation(SearchIn, names=RECENT_TURNS)
async def memory_search(app: AppContext, agent: str, params: SearchIn) -> SearchResult:
    """Search your memories and past conversation by words and meaning, in Chinese or English, before answering
    about the past (mid-conversation, add recent_turns). Returns hits best first with the signals that matched.
    """
    outcome = await offload(app.service.search, agent, params)
    return SearchResult.of(outcome)


@operation(AmendmentIn, keyed=True)
async def memory_amend(app: AppContext, agent: str, data: AmendmentIn, key: str | None) -> Amended:
    """Attach a correction or afterthought to one of your memories (never rewritten): the note is shown with it from
    then on. Returns the amendment's id.
    """
    amendment_id = await offload(app.service.amend, agent, data, key=key)
    return Amended(id=amendment_id, narrative_id=data.narrative_id)


def register(server: MCPServer) -> None:
    server.add_tool(memory_write, title="Write a memory", annotations=WRITE)
    server.add_tool(memory_recall, title="Recall recent memories", annotations=READ)
    server.add_tool(memory_search, title="Search memory", annotations=READ)
    server.add_tool(memory_amend, title="Amend a memory", annotations=WRITE)
