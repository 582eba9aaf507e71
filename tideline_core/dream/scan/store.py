"""The scan over the store: the unindexed-context scan from the agent's watermark, and the source links to infer."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Select, or_, select

from tideline_core.dream.scan.backfill import WINDOW, InferredLink, NarrativeAnchor, TurnAnchor, propose_links
from tideline_core.dream.scan.scanner import NarrativeRow, ScanReport, TurnRow, scan
from tideline_core.numeric import np
from tideline_core.store.database import Database
from tideline_core.store.embeddings import vectors_of
from tideline_core.store.schema import ContextTurn, Narrative, NarrativeSource, ScanWatermark
from tideline_core.text.dates import as_utc


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


def infer_source_links(db: Database, agent_id: str, model: str) -> tuple[int, list[InferredLink]]:
    """The links to propose for the agent's narratives that have none (read only: the scan's plan writes them).

    → (how many narratives were considered, the links). Only embedded rows take part; a narrative
    with any link, explicit or inferred, is left alone, so a second scan proposes nothing again.
    """
    with db.read() as conn:
        linked = select(NarrativeSource.narrative_id).where(NarrativeSource.agent_id == agent_id)
        rows = conn.execute(
            select(Narrative.id, Narrative.occurred_at, Narrative.gesture, Narrative.context)
            .where(
                Narrative.agent_id == agent_id,
                Narrative.embedding_state == "done",
                Narrative.superseded_by.is_(None),
                Narrative.id.not_in(linked),
            )
            .order_by(Narrative.id)
        ).all()
        n_vectors = vectors_of(conn, "narrative", [r.id for r in rows], model)
        candidates = [r for r in rows if r.id in n_vectors]
        turns: list[Any] = []
        for lo, hi in _spans([as_utc(r.occurred_at) for r in candidates], WINDOW):
            turns += conn.execute(
                select(
                    ContextTurn.id,
                    ContextTurn.created_at,
                    ContextTurn.content,
                    ContextTurn.session_id,
                    ContextTurn.role,
                    ContextTurn.speaker,
                ).where(
                    ContextTurn.agent_id == agent_id,
                    ContextTurn.embedding_state == "done",
                    ContextTurn.created_at >= lo,
                    ContextTurn.created_at <= hi,
                )
            ).all()
        t_vectors = vectors_of(conn, "context", [t.id for t in turns], model)
        turns = [t for t in turns if t.id in t_vectors]
    if not candidates or not turns:
        return len(candidates), []
    links = propose_links(
        [NarrativeAnchor(r.id, r.occurred_at, "\n".join(filter(None, (r.gesture, r.context)))) for r in candidates],
        np.stack([n_vectors[r.id] for r in candidates]),
        [TurnAnchor(t.id, t.created_at, t.content, t.session_id, t.role, t.speaker) for t in turns],
        np.stack([t_vectors[t.id] for t in turns]),
    )
    return len(candidates), links


def _spans(times: list[datetime], window: timedelta) -> list[tuple[datetime, datetime]]:
    """The times ± window, overlapping ones merged: the stretches of conversation worth loading."""
    spans: list[tuple[datetime, datetime]] = []
    for at in sorted(times):
        lo, hi = at - window, at + window
        if spans and lo <= spans[-1][1]:
            spans[-1] = (spans[-1][0], hi)
        else:
            spans.append((lo, hi))
    return spans
