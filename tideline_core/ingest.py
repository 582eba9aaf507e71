"""Ingest work the workers run: embedding pending rows in batches, outside any write transaction."""

from __future__ import annotations

from dataclasses import dataclass

from tideline_core.embedding import Embedder
from tideline_core.store.database import Database
from tideline_core.store.embeddings import KINDS, pending_rows, save_embeddings
from tideline_core.store.turns import turn_windows


@dataclass(frozen=True)
class EmbedReport:
    embedded: int
    batches: int
    remaining: bool


def embed_pending(
    db: Database,
    embedder: Embedder,
    *,
    agent_id: str | None = None,
    kinds: tuple[str, ...] = KINDS,
    batch_size: int = 32,
    max_batches: int = 50,
) -> EmbedReport:
    """Embed rows still pending (oldest first). Safe to run twice or concurrently: saving is an upsert.

    The embedder is called with no transaction open; each batch is saved in its own short write.
    A context turn gets two vectors from one embedder call: 'base' (the turn) and 'ctx' (the turn
    with the two turns before it), saved together before the row is marked done.
    """
    embedded = batches = 0
    for kind in kinds:
        while batches < max_batches:
            with db.read() as conn:
                rows = pending_rows(conn, kind, agent_id=agent_id, limit=batch_size)
            if not rows:
                break
            texts = [r.text for r in rows]
            if kind == "context":
                with db.read() as conn:
                    window = turn_windows(conn, [r.id for r in rows])
                vectors = embedder.passages(texts + [window.get(r.id, r.text) for r in rows])
                base, ctx = vectors[: len(rows)], vectors[len(rows) :]
                with db.write() as conn:
                    save_embeddings(conn, kind, rows, ctx, embedder.model, view="ctx", mark_done=False)
                    embedded += save_embeddings(conn, kind, rows, base, embedder.model)
            else:
                vectors = embedder.passages(texts)
                with db.write() as conn:
                    embedded += save_embeddings(conn, kind, rows, vectors, embedder.model)
            batches += 1
    remaining = False
    if batches >= max_batches:
        with db.read() as conn:
            remaining = any(pending_rows(conn, kind, agent_id=agent_id, limit=1) for kind in kinds)
    return EmbedReport(embedded=embedded, batches=batches, remaining=remaining)
