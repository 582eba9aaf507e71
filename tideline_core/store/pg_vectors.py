"""PostgreSQL's vector index: each embedding also as a pgvector `halfvec(384)` in `embeddings.vec`, searched through
the agent's own HNSW graph once its view is large, else by an exact scan of its rows (`agent_indexes`).

Why `halfvec` and not `vector`: half the bytes per vector (768 instead of 1,536 at 384 dimensions)
and so half the HNSW graph to keep in shared buffers, for a cosine that differs from float32's by
about 1e-3 at most (e5's vectors are L2-normalized; their components are far from float16's
limits). The float32 blob in `vector` stays the vector of record (SQLite, `tideline db copy`, the
dream's clustering); `vec` is the search copy.

Only vectors of `DIM` dimensions (the default local model's) get a `vec`; others (an HTTP model
of another size) leave it NULL and are searched by the in-memory index (`search.pg_source`).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, Engine, text

from tideline_core.errors import ConfigurationError
from tideline_core.numeric import np
from tideline_core.store import agent_indexes
from tideline_core.store.schema import EXTRACT_SQL

DIM = 384
VIEWS = (("narrative", "base"), ("context", "base"), ("context", "ctx"))  # the (kind, view)s with vectors searched
EF_SEARCH = (
    400  # HNSW candidates per walk (TIDELINE_PG_EF_SEARCH); docs/benchmarks.md "Many agents": the recall it gives
)
MAX_SCAN_TUPLES = 40_000  # how far an iterative scan may walk when filters reject rows
BASE = {"narrative": ("narratives", "occurred_at"), "context": ("context_turns", "created_at")}
_enabled: weakref.WeakKeyDictionary[Engine, bool] = weakref.WeakKeyDictionary()
_warned: set[int] = set()
log = logging.getLogger(__name__)


def available(conn: Connection) -> bool:
    """Whether this PostgreSQL server can load pgvector (installed, whether or not created in this database)."""
    found = conn.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first()
    return found is not None


def enabled(conn: Connection) -> bool:
    """Whether `embeddings.vec` exists here (remembered per engine: asked once per process)."""
    if conn.dialect.name != "postgresql":
        return False
    engine = conn.engine
    if engine not in _enabled:
        found = conn.execute(
            text(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'embeddings' AND column_name = 'vec'"
            )
        ).first()
        _enabled[engine] = found is not None
    return _enabled[engine]


def require(conn: Connection) -> None:
    """ConfigurationError, saying how to add it, unless this PostgreSQL database has pgvector's column.

    Search on PostgreSQL reads the database's own indexes from every process; without the vector
    column there would have to be another way to search, one that loads every agent's vectors into
    each process. So nothing starts on such a database, where the fix is one package and one upgrade.
    """
    if enabled(conn):
        return
    step = (
        "the server has it: run `tideline db upgrade` as a role that may CREATE EXTENSION (the database's owner or a "
        "superuser)"
        if available(conn)
        else "install it on the server (Debian/Ubuntu: postgresql-<version>-pgvector; Docker: the pgvector/pgvector "
        "image), then run `tideline db upgrade`"
    )
    raise ConfigurationError(f"this PostgreSQL database has no pgvector (embeddings.vec), which Tideline needs: {step}")


def forget(engine: Engine) -> None:
    """Ask again next time (after `ensure` added the column)."""
    _enabled.pop(engine, None)


def ensure(conn: Connection, *, build_indexes: bool = True) -> bool:
    """Create the extension, the column and (unless told not to) the agents' own indexes due; False without
    pgvector on the server (nothing changed). Idempotent; the migration and `tideline db upgrade` call it."""
    if not available(conn):
        return False
    conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    conn.execute(text(f"ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS vec halfvec({DIM})"))
    backfill(conn)
    forget(conn.engine)
    if build_indexes:
        agent_indexes.create_due(conn)
    return True


def literal(vector: np.ndarray) -> str:
    """pgvector's text form of a vector: '[0.1,0.2,...]'."""
    return "[" + ",".join(f"{x:.7g}" for x in np.asarray(vector, dtype=np.float32).tolist()) + "]"


def backfill(conn: Connection, batch: int = 2000) -> int:
    """Fill `vec` from the float32 blob wherever it is missing (vectors stored before pgvector was there); returns
    how many rows were filled."""
    filled = 0
    last = 0
    while True:
        rows = conn.execute(
            text(
                "SELECT id, dim, vector FROM embeddings WHERE vec IS NULL AND dim = :dim AND id > :last "
                "ORDER BY id LIMIT :batch"
            ),
            {"dim": DIM, "last": last, "batch": batch},
        ).all()
        if not rows:
            return filled
        conn.execute(
            text("UPDATE embeddings SET vec = CAST(:vec AS halfvec) WHERE id = :id"),
            [{"id": r.id, "vec": literal(np.frombuffer(r.vector, dtype=np.float32, count=r.dim))} for r in rows],
        )
        filled += len(rows)
        last = rows[-1].id


def upsert_rows(conn: Connection, rows: Sequence[dict[str, object]], matrix: np.ndarray) -> None:
    """Insert or replace `embeddings` rows (the columns `save_embeddings` writes, keyed by kind, row and view)
    with their `vec`, row i's vector `matrix[i]`; a replaced row gets a fresh id, as a new one would."""
    with_vec = matrix.shape[1] == DIM
    if not with_vec and matrix.shape[1] not in _warned:
        _warned.add(matrix.shape[1])  # once per size and process: every batch would say it again
        log.warning(
            "vectors of %d dimensions are not indexed by pgvector (halfvec(%d)); dense search on this "
            "database reads them into memory instead",
            matrix.shape[1],
            DIM,
        )
    conn.execute(
        text(
            "INSERT INTO embeddings (kind, row_id, agent_id, model, dim, vector, view, created_at, vec) "
            "VALUES (:kind, :row_id, :agent_id, :model, :dim, :vector, :view, now(), CAST(:vec AS halfvec)) "
            "ON CONFLICT ON CONSTRAINT uq_embeddings_kind_row_view DO UPDATE SET "
            "id = nextval(pg_get_serial_sequence('embeddings', 'id')), agent_id = EXCLUDED.agent_id, "
            "model = EXCLUDED.model, dim = EXCLUDED.dim, vector = EXCLUDED.vector, created_at = now(), "
            "vec = EXCLUDED.vec"
        ),
        [{**row, "vec": literal(matrix[i]) if with_vec else None} for i, row in enumerate(rows)],
    )


def nearest(
    conn: Connection,
    agent_id: str,
    kind: str,
    view: str,
    model: str,
    query: np.ndarray,
    k: int,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    extracts: bool = True,
    exact: bool = False,
    ef_search: int = EF_SEARCH,
) -> list[tuple[int, float]]:
    """Top-k (row id, cosine) of the agent's `view` vectors of `kind` by `model`, through the HNSW index
    (`exact`: by a full scan of the agent's rows instead, for measuring the index's recall)."""
    walks = [(kind, view)]
    return nearest_views(
        conn, agent_id, walks, model, query, k, since, until, extracts=extracts, exact=exact, ef_search=ef_search
    )[0]


def nearest_views(
    conn: Connection,
    agent_id: str,
    walks: Sequence[tuple[str, str]],
    model: str,
    query: np.ndarray,
    k: int,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    extracts: bool = True,
    exact: bool = False,
    ef_search: int = EF_SEARCH,
) -> list[list[tuple[int, float]]]:
    """`nearest` of each (kind, view) of `walks`, in their order: every walk in one statement (each its own
    subquery, joined by UNION ALL), after one for their settings."""
    for kind, view in walks:
        if (kind, view) not in VIEWS:
            raise ValueError(f"no vector index for kind {kind!r} and view {view!r}")
    params: dict[str, object] = {"model": model, "q": literal(query), "k": k}
    if since is not None:
        params["since"] = since
    if until is not None:
        params["until"] = until
    distance = "(e.vec <=> CAST(:q AS halfvec))"
    # `+ 0` hides the operator from the planner, so the exact form cannot use the index.
    order = f"{distance} + 0" if exact else distance
    parts = []
    for n, (kind, view) in enumerate(walks):
        table, stamp = BASE[kind]
        # The agent, kind and view as constants: the agent's own graph where it has one, else its rows alone.
        clauses = [agent_indexes.owned_by(agent_id, "e."), f"e.kind = '{kind}'", f"e.view = '{view}'"]
        clauses += ["e.model = :model", "e.vec IS NOT NULL"]
        join = ""
        if since is not None or until is not None or (kind == "narrative" and not extracts):
            join = f" JOIN {table} b ON b.id = e.row_id"
            if since is not None:
                clauses.append(f"b.{stamp} >= :since")
            if until is not None:
                clauses.append(f"b.{stamp} <= :until")
            if kind == "narrative" and not extracts:
                clauses.append(f"NOT {EXTRACT_SQL}")
        walk = (
            f"SELECT e.row_id AS id, 1 - {distance} AS cosine FROM embeddings e{join} "
            f"WHERE {' AND '.join(clauses)} ORDER BY {order} LIMIT :k"
        )
        parts.append(f"SELECT {n} AS walk, id, cosine FROM ({walk}) AS w{n}")
    found: list[list[tuple[int, float]]] = [[] for _ in walks]
    if not parts:
        return found
    # One round trip for the walks' three settings (each for this transaction only).
    conn.execute(
        text(
            "SELECT set_config('hnsw.ef_search', :ef, true), set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.max_scan_tuples', :tuples, true)"
        ),
        {"ef": str(min(max(int(ef_search), k), 1000)), "tuples": str(MAX_SCAN_TUPLES)},
    )
    for r in conn.execute(text(" UNION ALL ".join(parts)), params).all():
        found[int(r.walk)].append((int(r.id), float(r.cosine)))
    # relaxed_order may hand rows back slightly out of order: the ranking is by cosine.
    return [sorted(hits, key=lambda hit: (-hit[1], hit[0])) for hits in found]
