"""What the tiers select from, read from the store for one agent; and what each session was already shown."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, delete, func, or_, select
from sqlalchemy.dialects import sqlite

from tideline_core.domain.records import (
    AmendmentNote,
    ContextTurnRecord,
    NarrativeRecord,
    ProfileRecord,
    SelfConceptRecord,
    SnapshotRecord,
    ThreadRecord,
)
from tideline_core.inject.tiers import OPEN_STATUSES, InjectRules
from tideline_core.store import profiles
from tideline_core.store.lookup import chunks
from tideline_core.store.narratives import load_narratives, turn_corrections
from tideline_core.store.schema import Amendment, ContextTurn, Injection, Narrative, NarrativeSource
from tideline_core.store.turns import load_turns

if TYPE_CHECKING:
    from tideline_core.dream.recluster.store import TopicSummary

MAX_BRIDGE_DAY_TURNS = 5_000  # turns of the most recent day looked at to choose the session
KEEP_INJECTIONS = timedelta(days=30)


@dataclass(frozen=True)
class SessionSources:
    self_concept: list[SelfConceptRecord]
    snapshot: SnapshotRecord | None
    threads: list[ThreadRecord]
    recent: list[NarrativeRecord]  # T2's candidates
    day_turns: list[ContextTurnRecord]  # T2b: the turns of the most recent day with conversation
    linked_weight: dict[str, float]  # T2b: session → weight of the narratives linked to its turns that day
    corrections: dict[int, AmendmentNote]  # T2b: turn → the latest amendment of a memory written from it
    topics: list[TopicSummary]
    profiles: list[ProfileRecord]
    own: frozenset[str] = frozenset()  # T3: the agent's and its user's names, listed as no other entity


def session_sources(conn: Connection, agent_id: str, since: datetime, rules: InjectRules) -> SessionSources:
    """Everything the session-start tiers choose from, in one read transaction."""
    # The dream's stores (the clustering's numpy, the entity graph's parsing): not for a per-turn block.
    from tideline_core.dream.graph.store import own_names
    from tideline_core.dream.recluster.store import read_topics

    snapshots = profiles.read_snapshots(conn, agent_id, limit=1)
    threads = [
        t
        for status in OPEN_STATUSES
        for t in profiles.read_threads(conn, agent_id, status=status, limit=rules.thread_limit)
    ]
    day_turns = _last_day_turns(conn, agent_id)
    return SessionSources(
        self_concept=profiles.read_self_concept(conn, agent_id, kind=None, with_history=False),
        snapshot=snapshots[0] if snapshots else None,
        threads=threads,
        recent=_recent_heavy(conn, agent_id, since, rules),
        day_turns=day_turns,
        linked_weight=_linked_weight(conn, agent_id, day_turns),
        corrections=turn_corrections(conn, agent_id, [t.id for t in day_turns]),
        topics=read_topics(conn, agent_id, limit=rules.t3_topics, sample=0),
        profiles=profiles.read_profiles(conn, agent_id, entity=None, kind=None, with_history=False),
        own=own_names(conn, agent_id),
    )


def _recent_heavy(conn: Connection, agent_id: str, since: datetime, rules: InjectRules) -> list[NarrativeRecord]:
    ids = conn.execute(
        select(Narrative.id)
        .where(
            Narrative.agent_id == agent_id,
            Narrative.weight > rules.t2_min_weight,
            Narrative.occurred_at >= since,
            Narrative.superseded_by.is_(None),
            Narrative.narrative_type != "dream",
            # The dream's session digests retell a conversation; a digest the agent wrote is a memory like any other.
            or_(Narrative.narrative_type != "digest", Narrative.origin == "agent"),
        )
        .order_by(Narrative.weight.desc(), Narrative.occurred_at.desc(), Narrative.id.desc())
        .limit(rules.t2_pool)
    ).scalars()
    return list(load_narratives(conn, agent_id, list(ids)).values())


def _last_day_turns(conn: Connection, agent_id: str) -> list[ContextTurnRecord]:
    """The agent's turns of the most recent UTC day on which it had any conversation."""
    latest = conn.execute(select(func.max(ContextTurn.created_at)).where(ContextTurn.agent_id == agent_id)).scalar()
    if latest is None:
        return []
    start = latest.replace(hour=0, minute=0, second=0, microsecond=0)
    ids = conn.execute(
        select(ContextTurn.id)
        .where(ContextTurn.agent_id == agent_id, ContextTurn.created_at >= start)
        .order_by(ContextTurn.created_at.desc(), ContextTurn.id.desc())
        .limit(MAX_BRIDGE_DAY_TURNS)
    ).scalars()
    return list(load_turns(conn, agent_id, list(ids)).values())


def _linked_weight(conn: Connection, agent_id: str, turns: list[ContextTurnRecord]) -> dict[str, float]:
    """Per session: the summed weight of the distinct narratives linked to its turns among `turns`."""
    if not turns:
        return {}
    session_of = {t.id: t.session_id for t in turns}
    rows = conn.execute(
        select(NarrativeSource.context_id, Narrative.id, Narrative.weight)
        .join(Narrative, Narrative.id == NarrativeSource.narrative_id)
        .where(NarrativeSource.agent_id == agent_id, NarrativeSource.context_id.in_(list(session_of)))
    ).all()
    seen: set[tuple[str, int]] = set()
    weight: dict[str, float] = {}
    for context_id, narrative_id, narrative_weight in rows:
        session = session_of[context_id]
        if (session, narrative_id) not in seen:
            seen.add((session, narrative_id))
            weight[session] = weight.get(session, 0.0) + float(narrative_weight)
    return weight


def shown(conn: Connection, agent_id: str, session_id: str) -> set[tuple[str, int]]:
    """(kind, id) of every row this session was shown, but a memory amended since it was last shown: the session
    has not seen the correction."""
    shows, notes = Injection.__table__.c, Amendment.__table__.c
    seen = {
        (kind, int(row_id)): at
        for kind, row_id, at in conn.execute(
            select(shows.kind, shows.row_id, shows.injected_at).where(
                shows.agent_id == agent_id, shows.session_id == session_id
            )
        )
    }
    amended: dict[int, datetime] = {}
    for chunk in chunks([row_id for kind, row_id in seen if kind == "narrative"]):
        for narrative_id, latest in conn.execute(
            select(notes.narrative_id, func.max(notes.created_at))
            .where(notes.narrative_id.in_(chunk))
            .group_by(notes.narrative_id)
        ):
            amended[int(narrative_id)] = latest
    return {
        (kind, row_id)
        for (kind, row_id), at in seen.items()
        if kind != "narrative" or row_id not in amended or amended[row_id] <= at
    }


def remember_shown(
    conn: Connection, agent_id: str, session_id: str, items: Iterable[tuple[str, str, int]], now: datetime
) -> None:
    """Remember (tier, kind, id) as shown to the session at `now` (a row shown before keeps its first tier; when it
    was last shown is `now`)."""
    first_tier: dict[tuple[str, int], str] = {}
    for tier, kind, row_id in items:
        first_tier.setdefault((kind, row_id), tier)
    if not first_tier:
        return
    values = [
        {
            "agent_id": agent_id,
            "session_id": session_id,
            "kind": kind,
            "row_id": row_id,
            "tier": tier,
            "injected_at": now,
        }
        for (kind, row_id), tier in sorted(first_tier.items())
    ]
    # Two server processes may show a session the same row at once: the second insert only moves the time.
    insert: Any = sqlite.insert
    if conn.dialect.name == "postgresql":  # only a process on PostgreSQL loads its dialect's module
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        insert = pg_insert
    table = Injection.__table__
    statement = insert(table)
    keys = [table.c.agent_id, table.c.session_id, table.c.kind, table.c.row_id]
    conn.execute(
        statement.on_conflict_do_update(index_elements=keys, set_={"injected_at": statement.excluded.injected_at}),
        values,
    )


def forget_shown(conn: Connection, now: datetime) -> int:
    """Forget what sessions were shown over 30 days before `now` (a session that old is over); how many rows."""
    return conn.execute(delete(Injection).where(Injection.injected_at < now - KEEP_INJECTIONS)).rowcount


def recent_sessions(conn: Connection, agent_id: str, prefix: str, limit: int) -> list[str]:
    """The agent's session ids that start with `prefix`, the latest used first: sessions it recorded turns in or was
    shown a block in."""
    latest: dict[str, datetime] = {}
    for column, when, owner in (
        (ContextTurn.session_id, ContextTurn.created_at, ContextTurn.agent_id),
        (Injection.session_id, Injection.injected_at, Injection.agent_id),
    ):
        # substr, not LIKE: the prefix is the caller's text, and `%` or `_` in it must stay literal.
        query = (
            select(column, func.max(when))
            .where(owner == agent_id, column != "", func.substr(column, 1, len(prefix)) == prefix)
            .group_by(column)
            .order_by(func.max(when).desc())
            .limit(limit)
        )
        for session, at in conn.execute(query):
            if session not in latest or latest[session] < at:
                latest[session] = at
    return sorted(latest, key=lambda session: (latest[session], session), reverse=True)[:limit]
