"""Profiles, self-concept, threads and snapshots: upserts that keep every earlier version."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, insert, select, update

from tideline_core.domain.inputs import ProfileIn, SelfConceptIn, SnapshotIn, ThreadIn
from tideline_core.domain.records import ProfileRecord, SelfConceptRecord, SnapshotRecord, ThreadRecord, VersionRecord
from tideline_core.errors import NotFound
from tideline_core.store.lookup import as_record
from tideline_core.store.schema import Profile, ProfileHistory, SelfConcept, SelfConceptHistory, Snapshot, Thread
from tideline_core.text.dates import utcnow


def _upsert_versioned(
    conn: Connection, table: Any, history: Any, owner: str, agent_id: str, keys: dict[str, str], values: dict[str, Any]
) -> tuple[int, int]:
    """Insert the entry named by `keys`, or replace its content and move the old text to `history`.

    → (id, version). `owner` is the history table's column pointing back at the entry.
    """
    now = utcnow()
    current = conn.execute(
        select(table.__table__).where(table.agent_id == agent_id, *(getattr(table, k) == v for k, v in keys.items()))
    ).one_or_none()
    if current is None:
        new_id = conn.execute(
            insert(table)
            .values(agent_id=agent_id, **keys, **values, version=1, created_at=now, updated_at=now)
            .returning(table.id)
        ).scalar_one()
        return int(new_id), 1
    conn.execute(
        insert(history).values(
            **{owner: current.id}, agent_id=agent_id, version=current.version, content=current.content, changed_at=now
        )
    )
    version = current.version + 1
    conn.execute(update(table).where(table.id == current.id).values(**values, version=version, updated_at=now))
    return int(current.id), version


def _histories(conn: Connection, history: Any, owner: str, ids: list[int]) -> dict[int, tuple[VersionRecord, ...]]:
    """Earlier versions of each entry, oldest first."""
    found: dict[int, list[VersionRecord]] = defaultdict(list)
    if ids:
        column = getattr(history, owner)
        for h in conn.execute(select(history.__table__).where(column.in_(ids)).order_by(history.version)).all():
            found[h._mapping[owner]].append(as_record(VersionRecord, h))
    return {i: tuple(found[i]) for i in ids}


def upsert_profile(conn: Connection, agent_id: str, data: ProfileIn) -> tuple[int, int]:
    """Create or replace the (entity, kind) entry; the replaced text moves to history. → (id, version)."""
    return _upsert_versioned(
        conn,
        Profile,
        ProfileHistory,
        "profile_id",
        agent_id,
        {"entity": data.entity, "kind": data.kind},
        # A rewrite that does not mention the pin keeps it (a new entry starts unpinned).
        {"content": data.content, **({} if data.pinned is None else {"pinned": data.pinned})},
    )


def read_profiles(
    conn: Connection, agent_id: str, *, entity: str | None = None, kind: str | None = None, with_history: bool = False
) -> list[ProfileRecord]:
    query = select(Profile.__table__).where(Profile.agent_id == agent_id)
    if entity is not None:
        query = query.where(Profile.entity == entity)
    if kind is not None:
        query = query.where(Profile.kind == kind)
    rows = conn.execute(query.order_by(Profile.pinned.desc(), Profile.entity, Profile.kind)).all()
    history = _histories(conn, ProfileHistory, "profile_id", [r.id for r in rows] if with_history else [])
    return [as_record(ProfileRecord, r, history=history.get(r.id, ())) for r in rows]


def upsert_self_concept(conn: Connection, agent_id: str, data: SelfConceptIn) -> tuple[int, int]:
    """Create or replace the (kind, key) entry; the replaced text moves to history. → (id, version)."""
    return _upsert_versioned(
        conn,
        SelfConcept,
        SelfConceptHistory,
        "self_concept_id",
        agent_id,
        {"kind": data.kind, "key": data.key},
        {"content": data.content},
    )


def read_self_concept(
    conn: Connection, agent_id: str, *, kind: str | None = None, with_history: bool = False
) -> list[SelfConceptRecord]:
    query = select(SelfConcept.__table__).where(SelfConcept.agent_id == agent_id)
    if kind is not None:
        query = query.where(SelfConcept.kind == kind)
    rows = conn.execute(query.order_by(SelfConcept.kind, SelfConcept.key)).all()
    history = _histories(conn, SelfConceptHistory, "self_concept_id", [r.id for r in rows] if with_history else [])
    return [as_record(SelfConceptRecord, r, history=history.get(r.id, ())) for r in rows]


def write_thread(conn: Connection, agent_id: str, data: ThreadIn, source: str = "agent") -> int:
    """Open a new thread, or update one (by `thread_id`) of this agent: only the fields given change."""
    now = utcnow()
    given = {
        name: value
        for name, value in (
            ("title", data.title),
            ("content", data.content),
            ("status", data.status),
            ("priority", data.priority),
        )
        if value is not None
    }
    if data.thread_id is None:
        opened = {"content": "", "status": "open", "priority": 3, **given}
        new_id = conn.execute(
            insert(Thread)
            .values(agent_id=agent_id, **opened, source=source, created_at=now, updated_at=now)
            .returning(Thread.id)
        ).scalar_one()
        return int(new_id)
    result = conn.execute(
        update(Thread).where(Thread.id == data.thread_id, Thread.agent_id == agent_id).values(**given, updated_at=now)
    )
    if result.rowcount == 0:
        raise NotFound(f"thread {data.thread_id} does not exist for this agent")
    return data.thread_id


def read_thread(conn: Connection, agent_id: str, thread_id: int) -> ThreadRecord:
    row = conn.execute(
        select(Thread.__table__).where(Thread.id == thread_id, Thread.agent_id == agent_id)
    ).one_or_none()
    if row is None:
        raise NotFound(f"thread {thread_id} does not exist for this agent")
    return as_record(ThreadRecord, row)


def read_threads(conn: Connection, agent_id: str, *, status: str | None = None, limit: int = 20) -> list[ThreadRecord]:
    query = select(Thread.__table__).where(Thread.agent_id == agent_id)
    if status is not None:
        query = query.where(Thread.status == status)
    rows = conn.execute(query.order_by(Thread.priority.desc(), Thread.updated_at.desc()).limit(limit)).all()
    return [as_record(ThreadRecord, r) for r in rows]


def write_snapshot(conn: Connection, agent_id: str, data: SnapshotIn) -> int:
    new_id = conn.execute(
        insert(Snapshot)
        .values(agent_id=agent_id, content=data.content, mood=data.mood, created_at=utcnow())
        .returning(Snapshot.id)
    ).scalar_one()
    return int(new_id)


def read_snapshots(conn: Connection, agent_id: str, limit: int = 1) -> list[SnapshotRecord]:
    rows = conn.execute(
        select(Snapshot.__table__)
        .where(Snapshot.agent_id == agent_id)
        .order_by(Snapshot.created_at.desc(), Snapshot.id.desc())
        .limit(limit)
    ).all()
    return [as_record(SnapshotRecord, r) for r in rows]
