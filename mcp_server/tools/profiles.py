"""Who and what the agent knows: profiles, self-concept, threads and snapshots (writes keep history)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from mcp_server.models import (
    Profile,
    Profiles,
    ProfileWritten,
    SelfConcept,
    SelfConceptEntry,
    SelfConceptWritten,
    Snapshot,
    Snapshots,
    SnapshotWritten,
    Thread,
    Threads,
    ThreadWritten,
)
from mcp_server.tools._edge import READ, WRITE, IdempotencyKey, app_of, given, offload, spec, tool_errors, write_key
from tideline_core.domain.inputs import (
    ProfileIn,
    ProfilesQuery,
    SelfConceptIn,
    SelfConceptQuery,
    SnapshotIn,
    SnapshotQuery,
    ThreadIn,
    ThreadsQuery,
    parse,
)

Entity = Annotated[str, spec(ProfileIn, "entity", "Who or what the profile is about, e.g. a person's name or 'self'.")]
ProfileKindArg = Annotated[Any, spec(ProfileIn, "kind", "fact, impression, relationship, self (their view), contact.")]
ProfileContent = Annotated[str, spec(ProfileIn, "content", "The whole current text for this entity and kind.")]
Pinned = Annotated[
    Any, spec(ProfileIn, "pinned", "Always show it at session start (a rewrite keeps its pin unless given).")
]
EntityFilter = Annotated[
    str, spec(ProfilesQuery, "entity", "Only this entity; empty for all.", {"type": "string", "maxLength": 128})
]
ProfileKindFilter = Annotated[Any, spec(ProfilesQuery, "kind", "Only this kind.")]
WithHistory = Annotated[Any, spec(ProfilesQuery, "with_history", "Every earlier version too.")]

SelfKind = Annotated[
    Any, spec(SelfConceptIn, "kind", "fact (true of you), terrain (your inner landscape), reflection.")
]
SelfKey = Annotated[str, spec(SelfConceptIn, "key", "Which entry of that kind to replace (default 'main').")]
SelfContent = Annotated[str, spec(SelfConceptIn, "content", "The whole current text of the entry.")]
SelfKindFilter = Annotated[Any, spec(SelfConceptQuery, "kind", "Only this kind.")]
SelfHistory = Annotated[Any, spec(SelfConceptQuery, "with_history", "Every earlier version too.")]

Title = Annotated[
    str,
    spec(
        ThreadIn,
        "title",
        "The question or line of thought; required to open a thread.",
        {"type": "string", "minLength": 1, "maxLength": 2000},
    ),
]
ThreadContent = Annotated[
    str,
    spec(ThreadIn, "content", "Notes: what you know so far, what to try next.", {"type": "string", "maxLength": 20000}),
]
ThreadStatusArg = Annotated[Any, spec(ThreadIn, "status", "open by default for a new thread.")]
Priority = Annotated[Any, spec(ThreadIn, "priority", "How much it pulls at you (3 for a new thread by default).")]
ThreadId = Annotated[
    Any, spec(ThreadIn, "thread_id", "The id of an existing thread to update; omit to open a new one.")
]
StatusFilter = Annotated[Any, spec(ThreadsQuery, "status", "Only threads with this status.")]
ThreadLimit = Annotated[Any, spec(ThreadsQuery, "limit", "")]

SnapshotContent = Annotated[
    str, spec(SnapshotIn, "content", "Your state right now: what you are doing, feeling, holding.")
]
Mood = Annotated[str, spec(SnapshotIn, "mood", "A word or two for the mood.")]
SnapshotLimit = Annotated[Any, spec(SnapshotQuery, "limit", "How many snapshots, newest first.")]


async def memory_write_profile(
    ctx: Context,
    entity: Entity,
    kind: ProfileKindArg,
    content: ProfileContent,
    pinned: Pinned = None,
    idempotency_key: IdempotencyKey | None = None,
) -> ProfileWritten:
    """Write what you know about a person or thing, one entry per (entity, kind), as its complete new text; the old
    text is kept as history. Returns the entry's id and version.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        data = parse(ProfileIn, given(entity=entity, kind=kind, content=content, pinned=pinned))
        profile_id, version = await offload(app.service.write_profile, agent, data, key=write_key(idempotency_key))
    return ProfileWritten(id=profile_id, entity=data.entity, kind=data.kind, version=version)


async def memory_read_profiles(
    ctx: Context, entity: EntityFilter = "", kind: ProfileKindFilter = None, with_history: WithHistory = False
) -> Profiles:
    """Read what you know about people and things before talking with or about them, optionally with history. Returns
    the current entries, pinned first.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        query = parse(ProfilesQuery, given(entity=entity or None, kind=kind, with_history=with_history))
        records = await offload(app.service.profiles, agent, query)
    return Profiles(count=len(records), profiles=[Profile.of(p) for p in records])


async def memory_write_self_concept(
    ctx: Context,
    kind: SelfKind,
    content: SelfContent,
    key: SelfKey = "main",
    idempotency_key: IdempotencyKey | None = None,
) -> SelfConceptWritten:
    """Write part of your self-concept, one entry per (kind, key), as its complete new text; the old text is kept as
    history. Returns the entry's id and version.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        data = parse(SelfConceptIn, given(kind=kind, key=key, content=content))
        entry_id, version = await offload(app.service.write_self_concept, agent, data, key=write_key(idempotency_key))
    return SelfConceptWritten(id=entry_id, kind=data.kind, key=data.key, version=version)


async def memory_read_self_concept(
    ctx: Context, kind: SelfKindFilter = None, with_history: SelfHistory = False
) -> SelfConcept:
    """Read your self-concept (fact, terrain, reflection), optionally with earlier versions. Returns its entries."""
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        query = parse(SelfConceptQuery, given(kind=kind, with_history=with_history))
        records = await offload(app.service.self_concept, agent, query)
    return SelfConcept(count=len(records), entries=[SelfConceptEntry.of(s) for s in records])


async def memory_write_thread(
    ctx: Context,
    title: Title | None = None,
    content: ThreadContent | None = None,
    status: ThreadStatusArg = None,
    priority: Priority = None,
    thread_id: ThreadId = None,
    idempotency_key: IdempotencyKey | None = None,
) -> ThreadWritten:
    """Open a thread to come back to (a title, no thread_id) or update one (its thread_id; status='resolved' closes
    it). Returns its id, status and whether it is new.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        data = parse(
            ThreadIn, given(title=title, content=content, status=status, priority=priority, thread_id=thread_id)
        )
        thread = await offload(app.service.write_thread, agent, data, key=write_key(idempotency_key))
    return ThreadWritten(id=thread.id, status=thread.status, created=data.thread_id is None)


async def memory_read_threads(ctx: Context, status: StatusFilter = None, limit: ThreadLimit = 20) -> Threads:
    """Read your threads, highest priority first, when you have room to think or at session start. Returns them with
    notes, status and priority.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        query = parse(ThreadsQuery, given(status=status, limit=limit))
        records = await offload(app.service.threads, agent, query)
    return Threads(count=len(records), threads=[Thread.of(t) for t in records])


async def memory_write_snapshot(
    ctx: Context, content: SnapshotContent, mood: Mood = "", idempotency_key: IdempotencyKey | None = None
) -> SnapshotWritten:
    """Save your current state at a session's end or after a shift, so the next session picks up from it. Returns the
    snapshot's id.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        data = parse(SnapshotIn, given(content=content, mood=mood))
        snapshot_id = await offload(app.service.write_snapshot, agent, data, key=write_key(idempotency_key))
    return SnapshotWritten(id=snapshot_id)


async def memory_read_snapshot(ctx: Context, limit: SnapshotLimit = 1) -> Snapshots:
    """Read your latest state snapshot (or the last few). Returns them newest first, none when none was written."""
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        query = parse(SnapshotQuery, given(limit=limit))
        records = await offload(app.service.snapshots, agent, query)
    return Snapshots(count=len(records), snapshots=[Snapshot.of(s) for s in records])


def register(server: MCPServer) -> None:
    server.add_tool(memory_write_profile, title="Write a profile", annotations=WRITE)
    server.add_tool(memory_read_profiles, title="Read profiles", annotations=READ)
    server.add_tool(memory_write_self_concept, title="Write self-concept", annotations=WRITE)
    server.add_tool(memory_read_self_concept, title="Read self-concept", annotations=READ)
    server.add_tool(memory_write_thread, title="Open or update a thread", annotations=WRITE)
    server.add_tool(memory_read_threads, title="Read threads", annotations=READ)
    server.add_tool(memory_write_snapshot, title="Save a state snapshot", annotations=WRITE)
    server.add_tool(memory_read_snapshot, title="Read the latest snapshot", annotations=READ)
