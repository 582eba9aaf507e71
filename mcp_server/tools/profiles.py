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
from tideline_core.inputs import (
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

Entity = Annotated[
    str, spec(ProfileIn, "entity", "Who or what the profile is about, e.g. a person's name or 'self' (≤ 128 chars).")
]
ProfileKindArg = Annotated[Any, spec(ProfileIn, "kind", "One of fact, impression, relationship, self, contact.")]
ProfileContent = Annotated[
    str, spec(ProfileIn, "content", "The whole current text for this entity and kind (≤ 20000 chars).")
]
Pinned = Annotated[
    Any,
    spec(
        ProfileIn,
        "pinned",
        "true to always show this profile in full at session start; a new entry is unpinned unless given, a "
        "rewrite keeps its pin unless given.",
    ),
]
EntityFilter = Annotated[
    str, spec(ProfilesQuery, "entity", "Only this entity; empty for all.", {"type": "string", "maxLength": 128})
]
ProfileKindFilter = Annotated[
    Any, spec(ProfilesQuery, "kind", "Only this kind: fact, impression, relationship, self, contact.")
]
WithHistory = Annotated[
    Any, spec(ProfilesQuery, "with_history", "true to include every earlier version (default false).")
]

SelfKind = Annotated[
    Any, spec(SelfConceptIn, "kind", "One of fact (what is true of you), terrain (your inner landscape), reflection.")
]
SelfKey = Annotated[str, spec(SelfConceptIn, "key", "Which entry of that kind to replace (default 'main').")]
SelfContent = Annotated[str, spec(SelfConceptIn, "content", "The whole current text of the entry (≤ 20000 chars).")]
SelfKindFilter = Annotated[Any, spec(SelfConceptQuery, "kind", "Only this kind: fact, terrain, reflection.")]
SelfHistory = Annotated[
    Any, spec(SelfConceptQuery, "with_history", "true to include every earlier version (default false).")
]

Title = Annotated[
    str,
    spec(
        ThreadIn,
        "title",
        "The open question or line of thought, in one line (≤ 2000 chars); required to open a thread.",
        {"type": "string", "minLength": 1, "maxLength": 2000},
    ),
]
ThreadContent = Annotated[
    str,
    spec(
        ThreadIn,
        "content",
        "Notes: what you know so far, what to try next (≤ 20000 chars).",
        {"type": "string", "maxLength": 20000},
    ),
]
ThreadStatusArg = Annotated[
    Any, spec(ThreadIn, "status", "One of open (the default for a new thread), exploring, resolved, dropped.")
]
Priority = Annotated[
    Any, spec(ThreadIn, "priority", "How much it pulls at you, integer 1–5 (3 for a new thread by default).")
]
ThreadId = Annotated[
    Any, spec(ThreadIn, "thread_id", "The id of an existing thread to update; omit to open a new one.")
]
StatusFilter = Annotated[
    Any, spec(ThreadsQuery, "status", "Only threads with this status: open, exploring, resolved, dropped.")
]
ThreadLimit = Annotated[Any, spec(ThreadsQuery, "limit", "How many threads, integer 1–100 (default 20).")]

SnapshotContent = Annotated[
    str, spec(SnapshotIn, "content", "Your state right now: what you are doing, feeling, holding (≤ 20000 chars).")
]
Mood = Annotated[str, spec(SnapshotIn, "mood", "A word or two for the mood (≤ 128 chars).")]
SnapshotLimit = Annotated[
    Any, spec(SnapshotQuery, "limit", "How many snapshots, newest first, integer 1–50 (default 1).")
]


async def memory_write_profile(
    ctx: Context,
    entity: Entity,
    kind: ProfileKindArg,
    content: ProfileContent,
    pinned: Pinned = None,
    idempotency_key: IdempotencyKey | None = None,
) -> ProfileWritten:
    """Write what you know about a person or thing: one entry per (entity, kind), replaced as a whole.

    Kinds: fact (verifiable facts), impression (how they come across), relationship (what you are to
    each other), self (how they see themselves), contact (how to reach them). Send the complete new
    text; the previous text is kept as history, never lost.

    Returns the entry's id and its version (1 when new).
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
    """Read what you know about people and things (pinned entries first).

    Use it before talking with or about someone. Filter by entity and/or kind; ask for history to
    see how your picture of them changed.

    Returns the current entries, each with its version and, on request, earlier versions.
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
    """Write part of your self-concept: who you are, as you understand it now.

    Kinds: fact (plain truths about you), terrain (your inner landscape: tendencies, tensions,
    what moves you), reflection (what you make of yourself lately). One entry per (kind, key);
    send the complete new text, the old one is kept as history.

    Returns the entry's id and version.
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
    """Read your self-concept (fact, terrain, reflection entries), optionally with earlier versions.

    Returns every entry, or those of one kind.
    """
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
    """Open a thread — a question or line of thought you want to come back to — or update one.

    Without thread_id a new thread is opened (title required). With it, the fields you give replace
    that thread's and the others keep their values: status='resolved' alone closes it.

    Returns the thread's id and status, and whether it was newly created.
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
    """Read your threads, highest priority first (optionally only one status, e.g. open).

    Use it when you have room to think, or at session start to see what is still open.

    Returns the threads with their id, title, notes, status, priority and times.
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
    """Save a snapshot of your current state, so the next session can pick up where this one left off.

    Use it at the end of a session or after something shifts. Snapshots accumulate; the latest one
    is what a new session sees first.

    Returns the snapshot's id.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        data = parse(SnapshotIn, given(content=content, mood=mood))
        snapshot_id = await offload(app.service.write_snapshot, agent, data, key=write_key(idempotency_key))
    return SnapshotWritten(id=snapshot_id)


async def memory_read_snapshot(ctx: Context, limit: SnapshotLimit = 1) -> Snapshots:
    """Read your latest state snapshot (or the last few, newest first).

    Returns the snapshots; an empty list when none was ever written.
    """
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
