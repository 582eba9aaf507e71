"""The `embeddings` table: which rows wait for a vector, saving vectors, loading them back.

Vectors are float32 blobs with the model that made them and their view ('base': the row's own
text; 'ctx': a turn with the turns before it). They arrive L2-normalized from the embedder
(`tideline_core.embedding`) and are stored as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import Connection, delete, func, insert, select, update

from tideline_core.memory_text import narrative_passage, turn_text
from tideline_core.records import PendingRow
from tideline_core.store.catchup import IdCursor, ids_after
from tideline_core.store.lookup import chunks
from tideline_core.store.narratives import load_narratives
from tideline_core.store.schema import ContextTurn, Embedding, Narrative

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
            result.append(PendingRow("narrative", record.id, agent, narrative_passage(record)))
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
    if matrix.ndim != 2 or matrix.shape[0] != len(rows):
        raise ValueError(f"expected one vector per row ({len(rows)}), got an array of shape {matrix.shape}")
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


@dataclass(frozen=True)
class VectorBatch:
    """Vectors loaded for an index: the newest embedding id read, and row i's id, vector and time."""

    newest: int
    row_ids: list[int]
    matrix: np.ndarray | None  # (len(row_ids), dim) float32; None when nothing was loaded
    times: list[datetime]  # occurred_at of a narrative, created_at of a turn


def vectors_after(
    conn: Connection, agent_id: str, kind: str, model: str, view: str = "base", cursor: IdCursor | None = None
) -> VectorBatch:
    """The agent's `view` vectors of `model` for rows of `kind` that `cursor` has not absorbed (all without one)."""
    table = _TABLE[kind]
    stamp = Narrative.occurred_at if kind == "narrative" else ContextTurn.created_at
    after = cursor or IdCursor()
    rows = conn.execute(
        select(Embedding.id, Embedding.row_id, Embedding.dim, Embedding.vector, stamp)
        .join(table, table.id == Embedding.row_id)
        .where(
            Embedding.agent_id == agent_id,
            Embedding.kind == kind,
            Embedding.model == model,
            Embedding.view == view,
            ids_after(Embedding.id, after),
        )
        .order_by(Embedding.id)
    ).all()
    if not rows:
        return VectorBatch(after.last_id, [], None, [])
    matrix = np.frombuffer(b"".join(r.vector for r in rows), dtype=np.float32).reshape(len(rows), rows[0].dim)
    return VectorBatch(max(after.last_id, rows[-1].id), [r.row_id for r in rows], matrix, [r[4] for r in rows])


def vectors_of(
    conn: Connection, kind: str, ids: Sequence[int], model: str, view: str = "base"
) -> dict[int, np.ndarray]:
    """The `view` vector of `model` of each row of `kind` that has one."""
    out: dict[int, np.ndarray] = {}
    for chunk in chunks(list(ids)):
        for row_id, dim, blob in conn.execute(
            select(Embedding.row_id, Embedding.dim, Embedding.vector).where(
                Embedding.kind == kind, Embedding.model == model, Embedding.view == view, Embedding.row_id.in_(chunk)
            )
        ):
            out[row_id] = np.frombuffer(blob, dtype=np.float32, count=dim)
    return out
