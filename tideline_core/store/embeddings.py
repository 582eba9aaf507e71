"""The `embeddings` table: which rows wait for a vector, saving vectors, loading them back.

Vectors are float32 blobs with the model that made them and their view ('base': the row's own
text; 'ctx': a turn with the turns before it). They arrive L2-normalized from the embedder
(`tideline_core.embedding`) and are stored as they are; on PostgreSQL with pgvector each also as a
`halfvec` for the database's own vector index (`pg_vectors`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import Connection, bindparam, delete, func, insert, literal, or_, select, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from tideline_core.domain.memory_text import narrative_passage, turn_text
from tideline_core.domain.records import PendingRow
from tideline_core.numeric import np
from tideline_core.store import pg_vectors
from tideline_core.store.catchup import IdCursor, ids_after
from tideline_core.store.lookup import chunks, fetched_with_pauses, no_pause
from tideline_core.store.narratives import load_narratives
from tideline_core.store.schema import ContextTurn, Embedding, EmbeddingClaim, Narrative, extract_of

if TYPE_CHECKING:
    from sqlalchemy.dialects.postgresql import Insert as PgInsert

KINDS = ("narrative", "context")
VIEWS = ("base", "ctx")
PAUSE_ROWS = 500  # rows `vectors_after` fetches between two calls of its pause hook
# Which kinds carry each view: every row has 'base'; only context turns have a preceding-turns 'ctx'.
KINDS_WITH_VIEW: dict[str, tuple[str, ...]] = {"base": KINDS, "ctx": ("context",)}
_TABLE: dict[str, type[Narrative] | type[ContextTurn]] = {"narrative": Narrative, "context": ContextTurn}


# A claim outlives any embed task (their hard limit is 300 s): a claim older than this was left by a
# task that died, and its rows are free for the next one.
CLAIM_LEASE = timedelta(minutes=6)
_CLAIM_ATTEMPTS = 3


def claim_pending(
    conn: Connection, kind: str, *, token: str, agent_id: str | None = None, limit: int = 64, now: datetime
) -> list[PendingRow]:
    """Claim up to `limit` rows still waiting for an embedding (oldest first) that no one else's live claim holds.

    Call in a write transaction. On SQLite writers are serialized; on PostgreSQL the rows are locked with
    SKIP LOCKED and each claim is taken by an upsert on its key, so two tasks claiming at once get
    different rows whatever the interleaving. A claim of the same `token`
    is taken over: a redelivered task (same task id) picks up where its killed run left off. Returns
    each claimed row with the text the embedder should see.
    """
    table = _TABLE[kind]
    held = select(EmbeddingClaim.row_id).where(
        EmbeddingClaim.kind == kind, EmbeddingClaim.claimed_at > now - CLAIM_LEASE, EmbeddingClaim.token != token
    )
    query = select(table.id).where(table.embedding_state == "pending", table.id.not_in(held))
    if agent_id is not None:
        query = query.where(table.agent_id == agent_id)
    query = query.order_by(table.id).limit(limit)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True, of=table)
    # Candidates all taken by a claim the select could not yet see: a fresh select sees it and moves past.
    for _ in range(_CLAIM_ATTEMPTS):
        candidates = [int(i) for i in conn.execute(query).scalars()]
        if not candidates:
            return []
        ids = _take_claims(conn, kind, candidates, token=token, now=now)
        if ids:
            return _texts(conn, kind, ids)
    return []


def _take_claims(conn: Connection, kind: str, ids: Sequence[int], *, token: str, now: datetime) -> list[int]:
    """Claim those of `ids` that hold no other live claim, in one upsert on the claim's key → the ids taken.

    The select that found `ids` cannot settle this on its own: on PostgreSQL its snapshot may predate
    another run's committed claims while the rows it locks are already free again. The upsert waits for
    any claim being written at the same moment and then sees it, so each row goes to exactly one run.
    """
    owners = dict(conn.execute(select(_TABLE[kind].id, _TABLE[kind].agent_id).where(_TABLE[kind].id.in_(ids))).all())
    upsert = _pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    statement = upsert(EmbeddingClaim).values(
        [{"kind": kind, "row_id": i, "agent_id": owners[i], "token": token, "claimed_at": now} for i in ids]
    )
    taken = statement.on_conflict_do_update(
        index_elements=[EmbeddingClaim.kind, EmbeddingClaim.row_id],
        set_={"token": statement.excluded.token, "claimed_at": statement.excluded.claimed_at},
        where=or_(EmbeddingClaim.token == token, EmbeddingClaim.claimed_at <= now - CLAIM_LEASE),
    ).returning(EmbeddingClaim.row_id)
    return sorted(int(i) for i in conn.execute(taken).scalars())


def unclaimed_pending(conn: Connection, kind: str, *, agent_id: str | None = None, now: datetime) -> bool:
    """Whether a row of `kind` still waits for an embedding that no live claim holds (one a claim skipped because
    another transaction had it locked: PostgreSQL's keyword indexing locks new rows for a moment)."""
    table = _TABLE[kind]
    held = select(EmbeddingClaim.row_id).where(
        EmbeddingClaim.kind == kind, EmbeddingClaim.claimed_at > now - CLAIM_LEASE
    )
    query = select(table.id).where(table.embedding_state == "pending", table.id.not_in(held))
    if agent_id is not None:
        query = query.where(table.agent_id == agent_id)
    return conn.execute(query.limit(1)).first() is not None


def release_claims(conn: Connection, token: str) -> None:
    """Drop the claims of `token` (its run failed: the rows are free for a retry or another task)."""
    conn.execute(delete(EmbeddingClaim).where(EmbeddingClaim.token == token))


def pending_rows(conn: Connection, kind: str, *, agent_id: str | None = None, limit: int = 64) -> list[PendingRow]:
    """Rows still waiting for an embedding, oldest first, with the text the embedder should see (claimed or not)."""
    table = _TABLE[kind]
    query = select(table.id).where(table.embedding_state == "pending")
    if agent_id is not None:
        query = query.where(table.agent_id == agent_id)
    return _texts(conn, kind, [int(i) for i in conn.execute(query.order_by(table.id).limit(limit)).scalars()])


def _texts(conn: Connection, kind: str, ids: Sequence[int]) -> list[PendingRow]:
    """The rows `ids` of `kind` with the text the embedder sees (`memory_text`), in id order."""
    if not ids:
        return []
    if kind == "context":
        found = conn.execute(
            select(ContextTurn.id, ContextTurn.agent_id, ContextTurn.speaker, ContextTurn.content)
            .where(ContextTurn.id.in_(list(ids)))
            .order_by(ContextTurn.id)
        ).all()
        return [PendingRow("context", r.id, r.agent_id, turn_text(r.speaker, r.content)) for r in found]
    narratives = conn.execute(
        select(Narrative.id, Narrative.agent_id, Narrative.updated_at).where(Narrative.id.in_(list(ids)))
    ).all()
    owners = {r.id: r.agent_id for r in narratives}
    changed = {r.id: r.updated_at for r in narratives}
    by_agent: dict[str, list[int]] = {}
    for row_id in ids:
        by_agent.setdefault(owners[row_id], []).append(row_id)
    result = [
        PendingRow("narrative", record.id, agent, narrative_passage(record, record.amendments), changed[record.id])
        for agent, agent_ids in by_agent.items()
        for record in load_narratives(conn, agent, agent_ids).values()
    ]
    return sorted(result, key=lambda p: p.id)


def unembedded(conn: Connection, agent_id: str, kinds: Sequence[str]) -> int:
    """How many of the agent's rows of `kinds` still wait for their vector (meaning search cannot see them)."""
    total = 0
    for kind in kinds:
        table = _TABLE[kind]
        query = select(func.count()).where(table.embedding_state == "pending", table.agent_id == agent_id)
        total += int(conn.execute(query).scalar_one())
    return total


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
    """Store one `view` vector per row (replacing any older one: an upsert on its kind, row and view) and mark
    the rows done. Idempotent.

    Pass `mark_done=False` for all but the last view saved in one transaction, so a row is done
    only once every view of it is stored. A narrative changed since its text was read (`seen`: amended
    while its old text was being embedded) stays pending, so its new text is embedded too; the
    condition is on the row itself, which PostgreSQL checks again after waiting on the amendment's lock.
    """
    if not rows:
        return 0
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(rows):
        raise ValueError(f"expected one vector per row ({len(rows)}), got an array of shape {matrix.shape}")
    ids = [r.id for r in rows]
    postgres = conn.dialect.name == "postgresql"
    fresh_ids: list[int | None] = [None] * len(rows)
    if not postgres:
        # SQLite serializes writers, so replacing in place cannot meet another save. Ids are given past the
        # highest ever handed out: SQLite would reuse a deleted highest id, and in-memory indexes pick up
        # re-embedded rows by `id > last seen`.
        top = int(conn.execute(select(func.coalesce(func.max(Embedding.id), 0))).scalar_one())
        fresh_ids = list(range(top + 1, top + 1 + len(rows)))
        conn.execute(delete(Embedding).where(Embedding.kind == kind, Embedding.view == view, Embedding.row_id.in_(ids)))
    values = [
        {
            **({} if fresh_ids[i] is None else {"id": fresh_ids[i]}),
            "kind": kind,
            "row_id": r.id,
            "agent_id": r.agent_id,
            "model": model,
            "dim": matrix.shape[1],
            "vector": to_blob(matrix[i]),
            "view": view,
        }
        for i, r in enumerate(rows)
    ]
    if pg_vectors.enabled(conn):  # PostgreSQL with pgvector: the search copy of each vector goes in with it
        pg_vectors.upsert_rows(conn, values, matrix)
    elif postgres:
        statement = _pg_insert(Embedding)
        conn.execute(
            statement.on_conflict_do_update(
                constraint="uq_embeddings_kind_row_view",
                # A fresh id: in-memory indexes pick up re-embedded rows by `id > last seen`.
                set_={
                    "id": func.nextval(func.pg_get_serial_sequence("embeddings", "id")),
                    **{c: statement.excluded[c] for c in ("agent_id", "model", "dim", "vector")},
                    "created_at": func.now(),
                },
            ),
            values,
        )
    else:
        conn.execute(insert(Embedding), values)
    if mark_done:
        table = _TABLE[kind]
        unseen = [r.id for r in rows if r.seen is None]
        if unseen:
            conn.execute(update(table).where(table.id.in_(unseen)).values(embedding_state="done"))
        seen = [{"row": r.id, "seen": r.seen} for r in rows if r.seen is not None]
        if seen:
            conn.execute(
                update(Narrative)
                .where(Narrative.id == bindparam("row"), Narrative.updated_at == bindparam("seen"))
                .values(embedding_state="done"),
                seen,
            )
        conn.execute(delete(EmbeddingClaim).where(EmbeddingClaim.kind == kind, EmbeddingClaim.row_id.in_(ids)))
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
    conn: Connection,
    agent_id: str,
    kind: str,
    model: str,
    view: str = "base",
    cursor: IdCursor | None = None,
    *,
    extracts: bool = True,
    pause: Callable[[], None] | None = None,
) -> VectorBatch:
    """The agent's `view` vectors of `model` for rows of `kind` that `cursor` has not absorbed (all without one);
    without `extracts`, a narrative that is one of the dream's extracts is read past but not returned. `pause`:
    called before each batch of rows is fetched (a build on a thread of its own lets a search go first)."""
    table = _TABLE[kind]
    stamp = Narrative.occurred_at if kind == "narrative" else ContextTurn.created_at
    skipped = extract_of() if kind == "narrative" and not extracts else literal(False)
    after = cursor or IdCursor()
    result = conn.execute(
        select(
            Embedding.id, Embedding.row_id, Embedding.dim, Embedding.vector, stamp.label("at"), skipped.label("skipped")
        )
        .join(table, table.id == Embedding.row_id)
        .where(
            Embedding.agent_id == agent_id,
            Embedding.kind == kind,
            Embedding.model == model,
            Embedding.view == view,
            ids_after(Embedding.id, after),
        )
        .order_by(Embedding.id)
    )
    rows = fetched_with_pauses(result, PAUSE_ROWS, pause or no_pause)
    if not rows:
        return VectorBatch(after.last_id, [], None, [])
    newest = max(after.last_id, rows[-1].id)
    rows = [r for r in rows if not r.skipped]
    if not rows:
        return VectorBatch(newest, [], None, [])
    matrix = np.frombuffer(b"".join(r.vector for r in rows), dtype=np.float32).reshape(len(rows), rows[0].dim)
    return VectorBatch(newest, [r.row_id for r in rows], matrix, [r.at for r in rows])


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


def _pg_insert(table: type[Embedding] | type[EmbeddingClaim]) -> PgInsert:
    """PostgreSQL's INSERT, its dialect imported only by a process that writes to PostgreSQL."""
    from sqlalchemy.dialects.postgresql import insert

    return insert(table)
