"""Embedding rows: which rows wait for a vector, saving vectors, and loading them for the index."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
from sqlalchemy import Connection, delete, func, insert, select, update

from tideline_core.records import PendingRow
from tideline_core.schema import ContextTurn, Embedding, Narrative
from tideline_core.store.context import turn_text
from tideline_core.store.narratives import load_narratives, narrative_embedding_text
from tideline_core.store.versions import ids_after

KINDS = ("narrative", "context")
VIEWS = ("base", "ctx")
# Which kinds carry each view: every row has 'base'; only context turns have a preceding-turns 'ctx'.
KINDS_WITH_VIEW: dict[str, tuple[str, ...]] = {"base": KINDS, "ctx": ("context",)}
_TABLE: dict[str, type[Narrative] | type[ContextTurn]] = {"narrative": Narrative, "context": ContextTurn}


def pending_rows(
    conn: Connection, kind: str, *, agent_id: str | None = None, limit: int = 64, older_than: datetime | None = None
) -> list[PendingRow]:
    """Rows still waiting for an embedding, oldest first, with the text the embedder should see."""
    table = _TABLE[kind]
    query = select(table.id, table.agent_id).where(table.embedding_state == "pending")
    if agent_id is not None:
        query = query.where(table.agent_id == agent_id)
    if older_than is not None:
        stamp = Narrative.created_at if kind == "narrative" else ContextTurn.recorded_at
        query = query.where(stamp <= older_than)
    rows = conn.execute(query.order_by(table.id).limit(limit)).all()
    if kind == "context":
        found = conn.execute(
            select(ContextTurn.id, ContextTurn.agent_id, ContextTurn.speaker, ContextTurn.content)
            .where(ContextTurn.id.in_([r.id for r in rows]))
            .order_by(ContextTurn.id)
        ).all()
        return [PendingRow("context", r.id, r.agent_id, turn_text(r.speaker, r.content)) for r in found]
    result: list[PendingRow] = []
    by_agent: dict[str, list[int]] = {}
    for r in rows:
        by_agent.setdefault(r.agent_id, []).append(r.id)
    for agent, ids in by_agent.items():
        for record in load_narratives(conn, agent, ids).values():
            result.append(PendingRow("narrative", record.id, agent, narrative_embedding_text(record)))
    return sorted(result, key=lambda p: p.id)


def pending_agents(conn: Connection, *, older_than: datetime | None = None) -> list[tuple[str, str, int]]:
    """(kind, agent_id, how many) for every agent with rows waiting for an embedding."""
    out: list[tuple[str, str, int]] = []
    for kind, table in _TABLE.items():
        query = select(table.agent_id, func.count()).where(table.embedding_state == "pending")
        if older_than is not None:
            stamp = Narrative.created_at if kind == "narrative" else ContextTurn.recorded_at
            query = query.where(stamp <= older_than)
        for agent, count in conn.execute(query.group_by(table.agent_id)):
            out.append((kind, agent, int(count)))
    return out


def to_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def save_embeddings(
    conn: Connection,
    kind: str,
    rows: Sequence[PendingRow],
    vectors: np.ndarray,
    model: str,
    *,
    view: str = "base",
    mark_done: bool = True,
) -> int:
    """Store one `view` vector per row (replacing any older one) and mark the rows done. Idempotent.

    Pass `mark_done=False` for all but the last view saved in one transaction, so a row is done
    only once every view of it is stored.
    """
    if not rows:
        return 0
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
    ids = [r.id for r in rows]
    conn.execute(delete(Embedding).where(Embedding.kind == kind, Embedding.view == view, Embedding.row_id.in_(ids)))
    conn.execute(
        insert(Embedding),
        [
            {
                "kind": kind,
                "row_id": r.id,
                "agent_id": r.agent_id,
                "model": model,
                "dim": matrix.shape[1],
                "vector": to_blob(matrix[i]),
                "view": view,
            }
            for i, r in enumerate(rows)
        ],
    )
    if mark_done:
        table = _TABLE[kind]
        conn.execute(update(table).where(table.id.in_(ids)).values(embedding_state="done"))
    return len(ids)


def mark_stale(conn: Connection, model: str, view: str = "base") -> int:
    """Done rows without a `view` vector from `model` go back to pending, so the worker re-embeds them.

    Covers a model change (every vector is from another model) and a view added later (context
    turns embedded before the 'ctx' view existed).
    """
    changed = 0
    for kind in KINDS_WITH_VIEW.get(view, ()):
        table = _TABLE[kind]
        current = select(Embedding.row_id).where(
            Embedding.kind == kind, Embedding.view == view, Embedding.model == model
        )
        result = conn.execute(
            update(table)
            .where(table.embedding_state == "done", table.id.not_in(current))
            .values(embedding_state="pending")
        )
        changed += result.rowcount or 0
    return changed


def load_since(
    conn: Connection,
    agent_id: str,
    kind: str,
    after_id: int,
    model: str,
    view: str = "base",
    also: Sequence[int] = (),
) -> tuple[int, list[int], np.ndarray | None, list[datetime]]:
    """Vectors of `agent_id` with embedding id > `after_id` (or among the embedding ids `also`) for `model` and `view`.

    → (max embedding id, row ids, matrix, each row's time: occurred_at or the turn's created_at).
    """
    table = _TABLE[kind]
    stamp = Narrative.occurred_at if kind == "narrative" else ContextTurn.created_at
    rows = conn.execute(
        select(Embedding.id, Embedding.row_id, Embedding.dim, Embedding.vector, stamp)
        .join(table, table.id == Embedding.row_id)
        .where(
            Embedding.agent_id == agent_id,
            Embedding.kind == kind,
            Embedding.model == model,
            Embedding.view == view,
            ids_after(Embedding.id, after_id, also),
        )
        .order_by(Embedding.id)
    ).all()
    if not rows:
        return after_id, [], None, []
    dim = rows[0].dim
    matrix = np.frombuffer(b"".join(r.vector for r in rows), dtype=np.float32).reshape(len(rows), dim)
    return max(after_id, rows[-1].id), [r.row_id for r in rows], matrix, [r[4] for r in rows]
