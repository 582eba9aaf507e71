"""What a person browses: memories by filter a page at a time, one memory whole, the conversations and their turns."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, Text, and_, cast, func, or_, select

from tideline_core.domain.records import ContextTurnRecord, NarrativeRecord
from tideline_core.errors import InvalidInput, NotFound
from tideline_core.service.base import ServiceParts
from tideline_core.store.narratives import load_narratives
from tideline_core.store.schema import (
    ContextTurn,
    EmbeddingClusterMember,
    Narrative,
    NarrativeSource,
    NarrativeTag,
    ScanWatermark,
    TopicClusterMember,
)
from tideline_core.store.turns import load_turns, timeline

ORIGINS = ("agent", "llm", "extractive")
ORDERS = ("recent", "weight")
MAX_PAGE = 200
COUNT_CAP = 10_000  # a listing counts its matches up to here, then says "more than"
CONTEXT_TURNS = 2  # turns either side of a source turn shown with it
NEAR = 8
SESSION_TURNS = 500
VERSION_DEPTH = 50  # how far a chain of edits is followed each way


@dataclass(frozen=True)
class MemoryFilter:
    """Which memories a listing shows, in which order, and where its page starts (`after`: a page's cursor)."""

    narrative_type: str | None = None
    tags: tuple[str, ...] = ()  # any of them
    entities: tuple[str, ...] = ()  # every one of them
    origin: str | None = None
    min_weight: float | None = None
    max_weight: float | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_superseded: bool = False
    order: Literal["recent", "weight"] = "recent"
    limit: int = 50
    after: str | None = None

    def check(self) -> None:
        """InvalidInput naming the first field that breaks its rule."""
        if self.origin is not None and self.origin not in ORIGINS:
            raise InvalidInput("origin", f"must be one of {', '.join(ORIGINS)}, got {self.origin[:40]!r}")
        if self.order not in ORDERS:
            raise InvalidInput("order", f"must be one of {', '.join(ORDERS)}, got {str(self.order)[:40]!r}")
        if not 1 <= self.limit <= MAX_PAGE:
            raise InvalidInput("limit", f"must be between 1 and {MAX_PAGE}")
        for name in ("min_weight", "max_weight"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise InvalidInput(name, "a weight is between 0 and 1")
        if self.min_weight is not None and self.max_weight is not None and self.min_weight > self.max_weight:
            raise InvalidInput("min_weight", "must not be above max_weight")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise InvalidInput("since", "must not be after until")

    def admits(self, m: NarrativeRecord) -> bool:
        """Whether one memory passes the filter (the search results, filtered after the search)."""
        return (
            (self.narrative_type is None or m.narrative_type == self.narrative_type)
            and (not self.tags or bool(set(self.tags) & set(m.tags)))
            and all(e in m.related_entities for e in self.entities)
            and (self.origin is None or m.origin == self.origin)
            and (self.min_weight is None or m.weight >= self.min_weight)
            and (self.max_weight is None or m.weight <= self.max_weight)
            and (self.since is None or m.occurred_at >= self.since)
            and (self.until is None or m.occurred_at <= self.until)
            and (self.include_superseded or m.superseded_by is None)
        )


@dataclass(frozen=True)
class MemoryPage:
    items: tuple[NarrativeRecord, ...]
    next_after: str | None  # the next page's cursor; None on the last page
    total: int
    total_capped: bool  # more than `total` match


@dataclass(frozen=True)
class SourceLink:
    """How a memory points at one turn: linked when written, or inferred by the dream with its score."""

    turn_id: int
    inferred: bool
    score: float | None


@dataclass(frozen=True)
class SourceExcerpt:
    """A stretch of one conversation: a memory's source turns in it, with their neighbours, each turn once."""

    session_id: str
    links: tuple[SourceLink, ...]  # in the conversation's order
    context: tuple[ContextTurnRecord, ...]

    def link_of(self, turn_id: int) -> SourceLink | None:
        return next((link for link in self.links if link.turn_id == turn_id), None)


@dataclass(frozen=True)
class NearMemory:
    memory: NarrativeRecord
    reason: str


@dataclass(frozen=True)
class MemoryView:
    memory: NarrativeRecord
    sources: tuple[SourceExcerpt, ...]
    versions: tuple[NarrativeRecord, ...]  # the chain of edits and supersessions through it, oldest first
    near: tuple[NearMemory, ...]


@dataclass(frozen=True)
class SessionSummary:
    session_id: str
    first_at: datetime
    last_at: datetime
    turns: int
    linked_turns: int  # turns a memory links to
    unscanned_turns: int  # turns past the solidify scanner's watermark
    cursor: str  # where the page after this session starts


@dataclass(frozen=True)
class TurnLink:
    narrative_id: int
    inferred: bool


@dataclass(frozen=True)
class SessionTurn:
    turn: ContextTurnRecord
    memories: tuple[TurnLink, ...]
    scanned: bool


@dataclass(frozen=True)
class SessionView:
    turns: tuple[SessionTurn, ...]
    more: bool  # the session has more turns than are shown


def _cursor(first: Any, second: int) -> str:
    return json.dumps([first.isoformat() if isinstance(first, datetime) else first, second])


def _read_cursor(raw: str, field: str, first: type) -> tuple[Any, Any]:
    try:
        a, b = json.loads(raw)
        return (datetime.fromisoformat(a) if first is datetime else first(a)), b
    except (ValueError, TypeError) as exc:
        raise InvalidInput(field, "is not a cursor this listing gave out; start from the first page") from exc


def _entity_pattern(name: str) -> str:
    # An entity as the JSON list stores it (quoted, escaped as the driver's serializer writes it): one whole element.
    return json.dumps(name)


class BrowseOps(ServiceParts):
    def agent_ids(self) -> list[str]:
        """Every agent with a memory or a recorded turn, in name order."""
        with self.db.read() as conn:
            found = set(conn.execute(select(Narrative.agent_id).distinct()).scalars())
            found |= set(conn.execute(select(ContextTurn.agent_id).distinct()).scalars())
        return sorted(found)

    def memories_by_id(self, agent_id: str, ids: Sequence[int]) -> dict[int, NarrativeRecord]:
        """The agent's memories with these ids (another agent's are absent); reading logs no attention."""
        with self.db.read() as conn:
            return load_narratives(conn, agent_id, ids)

    def memories_page(self, agent_id: str, flt: MemoryFilter) -> MemoryPage:
        """One page of the agent's memories that pass the filter, newest or heaviest first; logs no attention."""
        flt.check()
        n = Narrative
        conditions: list[Any] = [n.agent_id == agent_id]
        if flt.narrative_type:
            conditions.append(n.narrative_type == flt.narrative_type)
        if flt.tags:
            tagged = select(NarrativeTag.narrative_id).where(
                NarrativeTag.agent_id == agent_id, NarrativeTag.tag.in_(list(flt.tags))
            )
            conditions.append(n.id.in_(tagged))
        for entity in flt.entities:
            conditions.append(cast(n.related_entities, Text).contains(_entity_pattern(entity), autoescape=True))
        if flt.origin:
            conditions.append(n.origin == flt.origin)
        if flt.min_weight is not None:
            conditions.append(n.weight >= flt.min_weight)
        if flt.max_weight is not None:
            conditions.append(n.weight <= flt.max_weight)
        if flt.since is not None:
            conditions.append(n.occurred_at >= flt.since)
        if flt.until is not None:
            conditions.append(n.occurred_at <= flt.until)
        if not flt.include_superseded:
            conditions.append(n.superseded_by.is_(None))
        key: Any = n.weight if flt.order == "weight" else n.created_at
        page = list(conditions)
        if flt.after:
            value, last_id = _read_cursor(flt.after, "after", float if flt.order == "weight" else datetime)
            page.append(or_(key < value, and_(key == value, n.id < last_id)))
        with self.db.read() as conn:
            rows = conn.execute(
                select(n.id, key).where(*page).order_by(key.desc(), n.id.desc()).limit(flt.limit + 1)
            ).all()
            capped = select(n.id).where(*conditions).limit(COUNT_CAP + 1).subquery()
            total = int(conn.execute(select(func.count()).select_from(capped)).scalar_one())
            shown = rows[: flt.limit]
            records = load_narratives(conn, agent_id, [r[0] for r in shown])
        more = len(rows) > flt.limit
        return MemoryPage(
            items=tuple(records[r[0]] for r in shown if r[0] in records),
            next_after=_cursor(shown[-1][1], shown[-1][0]) if more and shown else None,
            total=min(total, COUNT_CAP),
            total_capped=total > COUNT_CAP,
        )

    def memory_view(self, agent_id: str, narrative_id: int) -> MemoryView:
        """One memory with its source turns in their conversation, its versions and the memories near it."""
        with self.db.read() as conn:
            found = load_narratives(conn, agent_id, [narrative_id])
            if narrative_id not in found:
                raise NotFound(f"memory {narrative_id} does not exist for agent {agent_id}")
            memory = found[narrative_id]
            return MemoryView(
                memory=memory,
                sources=_sources(conn, agent_id, memory),
                versions=_versions(conn, agent_id, memory),
                near=_near(conn, agent_id, memory),
            )

    def sessions(self, agent_id: str, *, limit: int = 50, before: str | None = None) -> list[SessionSummary]:
        """The agent's conversations, the latest first, each with how many of its turns memories link to and
        how many the solidify scanner has not reached; `before` a summary's cursor, for the page after it."""
        if not 1 <= limit <= MAX_PAGE + 1:
            raise InvalidInput("limit", f"must be between 1 and {MAX_PAGE + 1}")
        t = ContextTurn
        last_at = func.max(t.created_at)
        grouped = select(
            t.session_id, func.min(t.created_at), last_at, func.count(), func.max(t.id).label("last_id")
        ).where(t.agent_id == agent_id)
        grouped = grouped.group_by(t.session_id)
        if before:
            when, last_id = _read_cursor(before, "before", datetime)
            grouped = grouped.having(or_(last_at < when, and_(last_at == when, func.max(t.id) < last_id)))
        with self.db.read() as conn:
            rows = conn.execute(grouped.order_by(last_at.desc(), func.max(t.id).desc()).limit(limit)).all()
            watermark = _watermark(conn, agent_id)
            names = [r[0] for r in rows]
            linked: dict[str, int] = {}
            unscanned: dict[str, int] = {}
            if names:
                linked_turns = (
                    select(t.session_id, func.count(func.distinct(t.id)))
                    .join(
                        NarrativeSource, and_(NarrativeSource.context_id == t.id, NarrativeSource.agent_id == agent_id)
                    )
                    .where(t.agent_id == agent_id, t.session_id.in_(names))
                    .group_by(t.session_id)
                )
                linked = {s: int(c) for s, c in conn.execute(linked_turns)}
                waiting = (
                    select(t.session_id, func.count())
                    .where(t.agent_id == agent_id, t.session_id.in_(names), t.id > watermark)
                    .group_by(t.session_id)
                )
                unscanned = {s: int(c) for s, c in conn.execute(waiting)}
        return [
            SessionSummary(
                session_id=name,
                first_at=first,
                last_at=last,
                turns=int(count),
                linked_turns=linked.get(name, 0),
                unscanned_turns=unscanned.get(name, 0),
                cursor=_cursor(last, int(last_id)),
            )
            for name, first, last, count, last_id in rows
        ]

    def session_view(self, agent_id: str, session_id: str) -> SessionView:
        """A session's turns in order, each with the memories that link it and whether the scanner has reached it."""
        with self.db.read() as conn:
            turns = timeline(conn, agent_id, session_id=session_id, limit=SESSION_TURNS + 1)
            if not turns:
                raise NotFound(f"session {session_id[:80]!r} has no turns for agent {agent_id}")
            shown = turns[:SESSION_TURNS]
            links = _links_of(conn, agent_id, [t.id for t in shown])
            watermark = _watermark(conn, agent_id)
        return SessionView(
            turns=tuple(SessionTurn(t, tuple(links.get(t.id, ())), t.id <= watermark) for t in shown),
            more=len(turns) > SESSION_TURNS,
        )


def _watermark(conn: Connection, agent_id: str) -> int:
    found = conn.execute(
        select(ScanWatermark.last_context_id).where(ScanWatermark.agent_id == agent_id)
    ).scalar_one_or_none()
    return int(found or 0)


def _links_of(conn: Connection, agent_id: str, turn_ids: Sequence[int]) -> dict[int, list[TurnLink]]:
    links: dict[int, list[TurnLink]] = defaultdict(list)
    if turn_ids:
        s = NarrativeSource
        for narrative_id, context_id, inferred in conn.execute(
            select(s.narrative_id, s.context_id, s.inferred)
            .where(s.agent_id == agent_id, s.context_id.in_(list(turn_ids)))
            .order_by(s.narrative_id)
        ):
            links[context_id].append(TurnLink(narrative_id, bool(inferred)))
    return links


def _sources(conn: Connection, agent_id: str, memory: NarrativeRecord) -> tuple[SourceExcerpt, ...]:
    wanted = {c: SourceLink(c, False, None) for c in memory.source_links}
    for link in memory.inferred_links:
        wanted.setdefault(link.context_id, SourceLink(link.context_id, True, link.score))
    found = load_turns(conn, agent_id, list(wanted))
    windows: list[tuple[str, list[int], int]] = []  # (session, the window's turn ids, the source turn)
    for turn in sorted(found.values(), key=lambda t: (t.session_id, t.id)):
        t = ContextTurn
        ids = list(
            conn.execute(
                select(t.id)
                .where(
                    t.agent_id == agent_id,
                    t.session_id == turn.session_id,
                    t.id.between(turn.id - 10 * CONTEXT_TURNS, turn.id + 10 * CONTEXT_TURNS),
                )
                .order_by(t.id)
            ).scalars()
        )
        at = ids.index(turn.id)
        windows.append((turn.session_id, ids[max(0, at - CONTEXT_TURNS) : at + CONTEXT_TURNS + 1], turn.id))
    merged: list[tuple[str, list[int], list[int]]] = []
    for session, ids, source in windows:
        last = merged[-1] if merged else None
        if last is not None and last[0] == session and ids[0] <= last[1][-1]:
            last[1].extend(i for i in ids if i > last[1][-1])
            last[2].append(source)
        else:
            merged.append((session, list(ids), [source]))
    near = load_turns(conn, agent_id, [i for _, ids, _ in merged for i in ids])
    return tuple(
        SourceExcerpt(session, tuple(wanted[s] for s in sources), tuple(near[i] for i in ids if i in near))
        for session, ids, sources in merged
    )


def _versions(conn: Connection, agent_id: str, memory: NarrativeRecord) -> tuple[NarrativeRecord, ...]:
    chain: dict[int, NarrativeRecord] = {memory.id: memory}
    later = memory
    for _ in range(VERSION_DEPTH):  # forward: what superseded it, and what superseded that
        if later.superseded_by is None or later.superseded_by in chain:
            break
        found = load_narratives(conn, agent_id, [later.superseded_by])
        if later.superseded_by not in found:
            break
        later = found[later.superseded_by]
        chain[later.id] = later
    frontier = [memory.id]
    for _ in range(VERSION_DEPTH):  # back: what it superseded
        earlier = list(
            conn.execute(
                select(Narrative.id).where(Narrative.agent_id == agent_id, Narrative.superseded_by.in_(frontier))
            ).scalars()
        )
        earlier = [i for i in earlier if i not in chain]
        if not earlier:
            break
        chain.update(load_narratives(conn, agent_id, earlier))
        frontier = earlier
    return tuple(sorted(chain.values(), key=lambda m: (m.created_at, m.id)))


def _near(conn: Connection, agent_id: str, memory: NarrativeRecord) -> tuple[NearMemory, ...]:
    reasons: dict[int, str] = {}

    def add(ids: Sequence[int], reason: str) -> None:
        for i in ids:
            if i != memory.id and i not in reasons and len(reasons) < NEAR:
                reasons[i] = reason

    for members in (EmbeddingClusterMember, TopicClusterMember):
        clusters = select(members.cluster_id).where(members.narrative_id == memory.id, members.agent_id == agent_id)
        add(
            list(
                conn.execute(
                    select(members.narrative_id)
                    .where(members.cluster_id.in_(clusters), members.agent_id == agent_id)
                    .order_by(members.narrative_id.desc())
                    .limit(NEAR + 1)
                ).scalars()
            ),
            "same soft cluster" if members is EmbeddingClusterMember else "same topic",
        )
    if memory.tags:
        shared = (
            select(NarrativeTag.narrative_id)
            .where(NarrativeTag.agent_id == agent_id, NarrativeTag.tag.in_(list(memory.tags)))
            .group_by(NarrativeTag.narrative_id)
            .order_by(func.count().desc(), NarrativeTag.narrative_id.desc())
            .limit(NEAR + 1)
        )
        add(list(conn.execute(shared).scalars()), "shares tags")
    for entity in memory.related_entities[:3]:
        naming = (
            select(Narrative.id)
            .where(
                Narrative.agent_id == agent_id,
                cast(Narrative.related_entities, Text).contains(_entity_pattern(entity), autoescape=True),
            )
            .order_by(Narrative.created_at.desc())
            .limit(NEAR + 1)
        )
        add(list(conn.execute(naming).scalars()), f"also names {entity}")
    found = load_narratives(conn, agent_id, list(reasons))
    return tuple(NearMemory(found[i], reason) for i, reason in reasons.items() if i in found)
