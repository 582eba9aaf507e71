"""The scan over the store: the unindexed-context scan from the agent's watermark, and source-link backfill."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import Connection, Select, insert, or_, select

from tideline_core.dream.scan.backfill import NarrativeAnchor, TurnAnchor, propose_links
from tideline_core.dream.scan.scanner import NarrativeRow, ScanReport, TurnRow, scan
from tideline_core.store.database import Database
from tideline_core.store.embeddings import vectors_of
from tideline_core.store.schema import ContextTurn, Narrative, NarrativeSource, ScanWatermark


def watermark_of(conn: Connection, agent_id: str) -> int:
    value = conn.execute(select(ScanWatermark.last_context_id).where(ScanWatermark.agent_id == agent_id)).scalar()
    return int(value or 0)


def select_turn_rows() -> Select[int, str, str, str, str, datetime, str]:
    """The columns a `TurnRow` is made of, for a query to narrow."""
    return select(
        ContextTurn.id,
        ContextTurn.session_id,
        ContextTurn.role,
        ContextTurn.speaker,
        ContextTurn.content,
        ContextTurn.created_at,
        ContextTurn.embedding_state,
    )


def scan_agent(db: Database, agent_id: str) -> ScanReport:
    """Tracks A–D for one agent. Does not move the watermark: solidify does, after it has committed."""
    with db.read() as conn:
        mark = watermark_of(conn, agent_id)
        linked = select(NarrativeSource.narrative_id).where(NarrativeSource.agent_id == agent_id)
        narratives = [
            NarrativeRow(r.id, r.gesture, r.created_at, r.linked, r.embedding_state)
            for r in conn.execute(
                select(
                    Narrative.id,
                    Narrative.gesture,
                    Narrative.created_at,
                    Narrative.embedding_state,
                    Narrative.id.in_(linked).label("linked"),
                )
                .where(
                    Narrative.agent_id == agent_id,
                    or_(Narrative.id.not_in(linked), Narrative.embedding_state == "pending"),
                )
                .order_by(Narrative.id)
            )
        ]
        turns = [
            TurnRow(r.id, r.session_id, r.role, r.speaker, r.content, r.created_at, r.embedding_state)
            for r in conn.execute(
                select_turn_rows()
                .where(
                    ContextTurn.agent_id == agent_id,
                    or_(ContextTurn.id > mark, ContextTurn.embedding_state == "pending"),
                )
                .order_by(ContextTurn.id)
            )
        ]
    return scan(narratives, turns, mark)


@dataclass(frozen=True)
class BackfillReport:
    narratives_considered: int
    links_added: int


def backfill_source_links(db: Database, agent_id: str, model: str) -> BackfillReport:
    """Infer links for narratives that have none, from time window + embedding similarity; marked inferred."""
    with db.read() as conn:
        explicit = set(
            conn.execute(
                select(NarrativeSource.narrative_id).where(
                    NarrativeSource.agent_id == agent_id, NarrativeSource.inferred.is_(False)
                )
            ).scalars()
        )
        inferred: dict[int, set[int]] = defaultdict(set)
        for nid, cid in conn.execute(
            select(NarrativeSource.narrative_id, NarrativeSource.context_id).where(
                NarrativeSource.agent_id == agent_id, NarrativeSource.inferred.is_(True)
            )
        ):
            inferred[nid].add(cid)
        rows = conn.execute(
            select(Narrative.id, Narrative.occurred_at)
            .where(Narrative.agent_id == agent_id, Narrative.embedding_state == "done")
            .order_by(Narrative.id)
        ).all()
        candidates = [r for r in rows if r.id not in explicit]
        n_vectors = vectors_of(conn, "narrative", [r.id for r in candidates], model)
        candidates = [r for r in candidates if r.id in n_vectors]
        turns = conn.execute(
            select(ContextTurn.id, ContextTurn.created_at)
            .where(ContextTurn.agent_id == agent_id, ContextTurn.embedding_state == "done")
            .order_by(ContextTurn.created_at, ContextTurn.id)
        ).all()
        t_vectors = vectors_of(conn, "context", [t.id for t in turns], model)
        turns = [t for t in turns if t.id in t_vectors]
    if not candidates or not turns:
        return BackfillReport(len(candidates), 0)
    anchors = [NarrativeAnchor(r.id, r.occurred_at, False, frozenset(inferred[r.id])) for r in candidates]
    links = propose_links(
        anchors,
        np.stack([n_vectors[r.id] for r in candidates]),
        [TurnAnchor(t.id, t.created_at) for t in turns],
        np.stack([t_vectors[t.id] for t in turns]),
    )
    fresh = [link for link in links if link.context_id not in inferred[link.narrative_id]]
    if fresh:
        with db.write() as conn:
            conn.execute(
                insert(NarrativeSource),
                [
                    {
                        "narrative_id": link.narrative_id,
                        "context_id": link.context_id,
                        "agent_id": agent_id,
                        "inferred": True,
                        "score": link.score,
                    }
                    for link in fresh
                ],
            )
    return BackfillReport(len(candidates), len(fresh))
