"""Who and what the agent knows: profiles, self-concept, threads and snapshots (writes keep history)."""

from __future__ import annotations

from mcp.server import MCPServer

from mcp_server.context import AppContext
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
from mcp_server.tools._edge import READ, WRITE, offload, operation
from tideline_core.domain.inputs import (
    ProfileIn,
    ProfilesQuery,
    SelfConceptIn,
    SelfConceptQuery,
    SnapshotIn,
    SnapshotQuery,
    ThreadIn,
    ThreadsQuery,
)


@operation(ProfileIn, keyed=True)
async def memory_write_profile(app: AppContext, agent: str, data: ProfileIn, key: str | None) -> ProfileWritten:
    """Write what you know about a person or thing, one entry per (entity, kind), as its complete new text; the old
    text is kept as history. Returns the entry's id and version.
    """
    profile_id, version = await offload(app.service.write_profile, agent, data, key=key)
    return ProfileWritten(id=profile_id, entity=data.entity, kind=data.kind, version=version)


@operation(ProfilesQuery)
async def memory_read_profiles(app: AppContext, agent: str, query: ProfilesQuery) -> Profiles:
    """Read what you know about people and things before talking with or about them, optionally with history. Returns
    the current entries, pinned first.
    """
    records = await offload(app.service.profiles, agent, query)
    return Profiles(count=len(records), profiles=[Profile.of(p) for p in records])


@operation(SelfConceptIn, keyed=True)
async def memory_write_self_concept(
    app: AppContext, agent: str, data: SelfConceptIn, key: str | None
) -> SelfConceptWritten:
    """Write part of your self-concept, one entry per (kind, key), as its complete new text; the old text is kept as
    history. Returns the entry's id and version.
    """
    entry_id, version = await offload(app.service.write_self_concept, agent, data, key=key)
    return SelfConceptWritten(id=entry_id, kind=data.kind, key=data.key, version=version)


@operation(SelfConceptQuery)
async def memory_read_self_concept(app: AppContext, agent: str, query: SelfConceptQuery) -> SelfConcept:
    """Read your self-concept (fact, terrain, reflection), optionally with earlier versions. Returns its entries."""
    records = await offload(app.service.self_concept, agent, query)
    return SelfConcept(count=len(records), entries=[SelfConceptEntry.of(s) for s in records])


@operation(ThreadIn, keyed=True)
async def memory_write_thread(app: AppContext, agent: str, data: ThreadIn, key: str | None) -> ThreadWritten:
    """Open a thread to come back to (a title, no thread_id) or update one (its thread_id; status='resolved' closes
    it). Returns its id, status and whether it is new.
    """
    thread = await offload(app.service.write_thread, agent, data, key=key)
    return ThreadWritten(id=thread.id, status=thread.status, created=data.thread_id is None)


@operation(ThreadsQuery)
async def memory_read_threads(app: AppContext, agent: str, query: ThreadsQuery) -> Threads:
    """Read your threads, highest priority first, when you have room to think or at session start. Returns them with
    notes, status and priority.
    """
    records = await offload(app.service.threads, agent, query)
    return Threads(count=len(records), threads=[Thread.of(t) for t in records])


@operation(SnapshotIn, keyed=True)
async def memory_write_snapshot(app: AppContext, agent: str, data: SnapshotIn, key: str | None) -> SnapshotWritten:
    """Save your current state at a session's end or after a shift, so the next session picks up from it. Returns the
    snapshot's id.
    """
    snapshot_id = await offload(app.service.write_snapshot, agent, data, key=key)
    return SnapshotWritten(id=snapshot_id)


@operation(SnapshotQuery)
async def memory_read_snapshot(app: AppContext, agent: str, query: SnapshotQuery) -> Snapshots:
    """Read your latest state snapshot (or the last few). Returns them newest first, none when none was written."""
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
