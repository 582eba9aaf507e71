"""Ingest work the workers run: embedding pending rows in batches, outside any write transaction."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from tideline_core.embedding import Embedder
from tideline_core.store.database import Database
from tideline_core.store.embeddings import KINDS, claim_pending, release_claims, save_embeddings, unclaimed_pending
from tideline_core.store.turns import turn_windows
from tideline_core.text.dates import utcnow


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
    token: str | None = None,
    budget_seconds: float | None = None,
) -> EmbedReport:
    """Embed rows still pending (oldest first), each batch claimed first so concurrent runs share the work.

    `token` names this run's claims (a task passes its id, so a redelivered task takes its own
    claims over); the claims of a run that fails are dropped at once. The embedder is called with no
    transaction open; each batch is claimed and saved in short writes of its own. A context turn gets
    two vectors from one embedder call: 'base' (the turn) and 'ctx' (the turn with the two turns
    before it), saved together before the row is marked done. Saving is an upsert, so even two runs
    that embedded the same row leave one vector per view.

    `budget_seconds`: no batch is claimed once this long has passed (a slow embedder), so a task
    ends well inside its time limit rather than being cut off in the middle of a save; what is left
    is reported as `remaining`.
    """
    run = token or uuid.uuid4().hex
    try:
        return _embed(db, embedder, agent_id, kinds, batch_size, max_batches, run, budget_seconds)
    except BaseException:
        with db.write() as conn:
            release_claims(conn, run)
        raise


def _embed(
    db: Database,
    embedder: Embedder,
    agent_id: str | None,
    kinds: tuple[str, ...],
    batch_size: int,
    max_batches: int,
    token: str,
    budget_seconds: float | None,
) -> EmbedReport:
    embedded = batches = 0
    started = time.monotonic()
    for kind in kinds:
        while batches < max_batches and (budget_seconds is None or time.monotonic() - started < budget_seconds):
            with db.write() as conn:
                rows = claim_pending(conn, kind, token=token, agent_id=agent_id, limit=batch_size, now=utcnow())
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
    # Rows another run claimed are its own; a row left unclaimed was passed over (the batch limit, the
    # time budget, or a lock held elsewhere as it was claimed) and needs another run, or it would wait
    # for the reconciler.
    with db.read() as conn:
        remaining = any(unclaimed_pending(conn, kind, agent_id=agent_id, now=utcnow()) for kind in kinds)
    return EmbedReport(embedded=embedded, batches=batches, remaining=remaining)
