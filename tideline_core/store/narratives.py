"""Narrative memories: insert with tags, source links and keyword index; recall; amend."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    CompoundSelect,
    Connection,
    Text,
    cast,
    func,
    insert,
    literal,
    literal_column,
    null,
    select,
    union_all,
    update,
)

from tideline_core.domain import scoring
from tideline_core.domain.inputs import AmendmentIn, NarrativeIn
from tideline_core.domain.memory_text import narrative_search_text
from tideline_core.domain.records import AmendmentNote, InferredSource, NarrativeRecord, WrittenNarrative
from tideline_core.errors import InvalidInput, NotFound
from tideline_core.store import keywords
from tideline_core.store.lookup import as_record, chunks, owned_rows
from tideline_core.store.schema import Amendment, ContextTurn, Narrative, NarrativeSource, NarrativeTag
from tideline_core.text.dates import utcnow


def shared_tag_count(conn: Connection, agent_id: str, tags: Sequence[str], exclude_id: int | None = None) -> int | None:
    """How many other narratives of the agent share at least one of `tags`, counted up to the point where the
    recurrence score stops rising (`scoring.SATURATED`); None when no tags.

    Counting every holder of a popular tag made each write cost time in proportion to the store (a dream
    writing 7,000 narratives into 30,000: 22 s of counting); the score needs only the first eleven.
    """
    if not tags:
        return None
    holders = select(NarrativeTag.narrative_id).where(
        NarrativeTag.agent_id == agent_id, NarrativeTag.tag.in_(list(tags))
    )
    if exclude_id is not None:
        holders = holders.where(NarrativeTag.narrative_id != exclude_id)
    first = holders.distinct().limit(scoring.SATURATED).subquery()
    return int(conn.execute(select(func.count()).select_from(first)).scalar_one())


def _check_source_links(conn: Connection, agent_id: str, links: Sequence[int]) -> None:
    if not links:
        return
    found = {r.id for r in owned_rows(conn, ContextTurn.__table__, agent_id, links, [ContextTurn.id])}
    missing = [i for i in links if i not in found]
    if missing:
        raise InvalidInput("source_links", f"context turn ids {missing} do not exist for this agent")


def insert_narrative(conn: Connection, agent_id: str, data: NarrativeIn) -> WrittenNarrative:
    """Insert a validated narrative (embedding pending) with the recurrence and weight `scoring` gives it now."""
    _check_source_links(conn, agent_id, data.source_links)
    recurrence = scoring.recurrence_score(shared_tag_count(conn, agent_id, data.tags))
    weight = scoring.weight(data.importance, data.emotional, recurrence, data.unresolved)
    now = utcnow()
    narrative_id = conn.execute(
        insert(Narrative)
        .values(
            agent_id=agent_id,
            narrative_type=data.narrative_type,
            gesture=data.gesture,
            context=data.context,
            moment=data.moment,
            cognition_direction=data.cognition_direction,
            importance=data.importance,
            emotional=data.emotional,
            recurrence=recurrence,
            unresolved=data.unresolved,
            weight=weight,
            entities_role=data.entities_role,
            related_entities=list(data.related_entities),
            occurred_at=data.occurred_at or now,
            created_at=now,
            updated_at=now,
            embedding_state="pending",
        )
        .returning(Narrative.id)
    ).scalar_one()
    if data.tags:
        conn.execute(
            insert(NarrativeTag), [{"narrative_id": narrative_id, "tag": t, "agent_id": agent_id} for t in data.tags]
        )
    if data.source_links:
        conn.execute(
            insert(NarrativeSource),
            [
                {"narrative_id": narrative_id, "context_id": c, "agent_id": agent_id, "inferred": False}
                for c in dict.fromkeys(data.source_links)
            ],
        )
    keywords.index_new(conn, "narrative", [(narrative_id, agent_id, narrative_search_text(data))])
    return WrittenNarrative(id=narrative_id, weight=weight, recurrence=recurrence)


def load_narratives(conn: Connection, agent_id: str, ids: Sequence[int]) -> dict[int, NarrativeRecord]:
    """Narratives of `agent_id` by id (ids of other agents are silently absent)."""
    if not ids:
        return {}
    rows = owned_rows(conn, Narrative.__table__, agent_id, ids)
    return _records(conn, rows)


def _records(conn: Connection, rows: Sequence[Any]) -> dict[int, NarrativeRecord]:
    ids = [r.id for r in rows]
    tags: dict[int, list[str]] = defaultdict(list)
    links: dict[int, list[int]] = defaultdict(list)
    inferred: dict[int, list[InferredSource]] = defaultdict(list)
    notes: dict[int, list[str]] = defaultdict(list)
    latest: dict[int, AmendmentNote] = {}
    if ids:
        for nid, part, words, cid, guessed, score, at, _place in conn.execute(_details(ids)):
            if part == _TAG:
                tags[nid].append(words)
            elif part == _NOTE:
                notes[nid].append(words)
                latest[nid] = AmendmentNote(words, at)
            elif guessed:
                inferred[nid].append(InferredSource(cid, score))
            else:
                links[nid].append(cid)
    return {
        r.id: as_record(
            NarrativeRecord,
            r,
            tags=tuple(sorted(tags[r.id])),
            related_entities=tuple(r.related_entities or ()),
            source_links=tuple(links[r.id]),
            inferred_links=tuple(inferred[r.id]),
            amendments=tuple(notes[r.id]),
            amended=latest.get(r.id),
        )
        for r in rows
    }


_TAG, _SOURCE, _NOTE = 0, 1, 2  # the parts of a narrative `_details` reads, in this order


def _details(ids: Sequence[int]) -> CompoundSelect:
    """The tags, source links and amendments of these narratives, in one statement (one round trip, not three):
    (narrative id, part, tag or note, context id, inferred, score, noted at, place); links by turn, notes as written."""
    tagged, source, amendment = NarrativeTag.__table__.c, NarrativeSource.__table__.c, Amendment.__table__.c

    def none(column: Any) -> Any:
        return cast(null(), column.type)

    parts = [
        select(
            tagged.narrative_id,
            literal(_TAG).label("part"),
            cast(tagged.tag, Text).label("words"),
            none(source.context_id).label("context_id"),
            none(source.inferred).label("inferred"),
            none(source.score).label("score"),
            none(amendment.created_at).label("at"),
            literal(0).label("place"),
        ).where(tagged.narrative_id.in_(ids)),
        select(
            source.narrative_id,
            literal(_SOURCE),
            cast(null(), Text),
            source.context_id,
            source.inferred,
            source.score,
            none(amendment.created_at),
            source.context_id,
        ).where(source.narrative_id.in_(ids)),
        select(
            amendment.narrative_id,
            literal(_NOTE),
            cast(amendment.note, Text),
            none(source.context_id),
            none(source.inferred),
            none(source.score),
            amendment.created_at,
            amendment.id,
        ).where(amendment.narrative_id.in_(ids)),
    ]
    return union_all(*parts).order_by(literal_column("part"), literal_column("place"))


def recall(
    conn: Connection,
    agent_id: str,
    *,
    limit: int = 10,
    narrative_type: str | None = None,
    tags: Sequence[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    min_weight: float | None = None,
    order: str = "recent",
) -> list[NarrativeRecord]:
    """Recent (or heaviest) narratives, optionally filtered by type, any of `tags`, time and weight."""
    query = select(Narrative.__table__).where(Narrative.agent_id == agent_id)
    if narrative_type:
        query = query.where(Narrative.narrative_type == narrative_type)
    if tags:
        tagged = select(NarrativeTag.narrative_id).where(
            NarrativeTag.agent_id == agent_id, NarrativeTag.tag.in_(list(tags))
        )
        query = query.where(Narrative.id.in_(tagged))
    if since is not None:
        query = query.where(Narrative.occurred_at >= since)
    if until is not None:
        query = query.where(Narrative.occurred_at <= until)
    if min_weight is not None:
        query = query.where(Narrative.weight >= min_weight)
    if order == "weight":
        query = query.order_by(Narrative.weight.desc(), Narrative.id.desc())
    else:
        query = query.order_by(Narrative.created_at.desc(), Narrative.id.desc())
    rows = conn.execute(query.limit(limit)).all()
    records = _records(conn, rows)
    return [records[r.id] for r in rows]


def amend(conn: Connection, agent_id: str, data: AmendmentIn) -> int:
    """Append a note to a narrative of this agent; the narrative text itself never changes.

    The note becomes part of the memory's text: indexed for keyword search at once (`keywords.index_again`),
    and the memory waits for a new vector that reads it (embedding pending). The narrative's row is
    locked first, so a catch-up never counts it while the note goes in.
    """
    exists = conn.execute(
        select(Narrative.id).where(Narrative.id == data.narrative_id, Narrative.agent_id == agent_id).with_for_update()
    ).scalar_one_or_none()
    if exists is None:
        raise NotFound(f"narrative {data.narrative_id} does not exist for this agent")
    now = utcnow()
    amendment_id = conn.execute(
        insert(Amendment)
        .values(narrative_id=data.narrative_id, agent_id=agent_id, note=data.note, created_at=now)
        .returning(Amendment.id)
    ).scalar_one()
    conn.execute(
        update(Narrative).where(Narrative.id == data.narrative_id).values(updated_at=now, embedding_state="pending")
    )
    record = load_narratives(conn, agent_id, [data.narrative_id])[data.narrative_id]
    keywords.index_again(conn, [(record.id, agent_id, narrative_search_text(record, record.amendments))])
    return int(amendment_id)


def turn_corrections(conn: Connection, agent_id: str, turn_ids: Sequence[int]) -> dict[int, AmendmentNote]:
    """Per context turn: the latest amendment of a memory written from it (an explicit source link, not a digest
    of its whole session), so the turn is shown with the correction of what it says."""
    latest: dict[int, tuple[int, AmendmentNote]] = {}
    source, amendment, narrative = NarrativeSource.__table__, Amendment.__table__, Narrative.__table__
    for chunk in chunks(list(turn_ids)):
        found = conn.execute(
            select(source.c.context_id, amendment.c.id, amendment.c.note, amendment.c.created_at)
            .join(amendment, amendment.c.narrative_id == source.c.narrative_id)
            .join(narrative, narrative.c.id == source.c.narrative_id)
            .where(
                source.c.agent_id == agent_id,
                source.c.context_id.in_(chunk),
                source.c.inferred.is_(False),
                narrative.c.narrative_type != "digest",
            )
        )
        for turn_id, amendment_id, note, at in found:
            if turn_id not in latest or amendment_id > latest[turn_id][0]:
                latest[turn_id] = (amendment_id, AmendmentNote(note, at))
    return {turn_id: note for turn_id, (_, note) in latest.items()}
