"""An agent's own indexes on PostgreSQL: once one of its views holds `OWN_ROWS` rows, an HNSW graph and a GIN index
over that agent's rows alone; below, its searches read its rows through the agent's b-tree indexes.

Why not one index of each view shared by every agent: a search for one agent through a shared index
reads the other agents' entries too. A shared HNSW graph is walked through the other agents' rows
and loses the agent's neighbours as its share of the graph falls; a shared GIN index hands over
every agent's postings of a term (hundreds of thousands among a few million rows) for the bitmap
to intersect with the agent's. So each agent's view below `OWN_ROWS` rows is read through the
(agent, …) b-trees the tables have anyway, every cosine computed exactly and every keyword row
tested, which costs less than a walk at that size; at `OWN_ROWS` the view gets partial indexes of
its own (`WHERE agent_id = '…'`, and the kind and view for a graph). A search names the agent, kind
and view as constants (`owned_by`): the planner matches a partial index only on constants, so it
reads that agent's index where there is one and its rows otherwise, only its own either way.

`build` makes the indexes that are due without blocking writes (CREATE INDEX CONCURRENTLY), one
builder at a time (an advisory lock); `tideline db upgrade` and the periodic
`tideline.dream.build_agent_indexes` task call it. `create_due` is the same inside a transaction,
for a store nobody writes to yet (a copy's target, a migration). docs/benchmarks.md "Many agents"
has the figures the layout and `OWN_ROWS` were chosen by.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text

log = logging.getLogger(__name__)

OWN_ROWS = 10_000  # rows of a view from which an agent's view has indexes of its own
TASK_MOST_ROWS = 300_000  # the largest view a periodic task builds for: its graph takes minutes, well inside a limit
HNSW_M = 24  # the graph's degree and build-time candidates: docs/benchmarks.md "Many agents" has the recall each gives
HNSW_EF_CONSTRUCTION = 128
PREFIX = "ix_agent_"
LOCK = 0x7469_6465_6772  # the advisory lock one builder holds at a time
# The indexes every agent shared before each had its own: dropped by the upgrade (migration 0012).
SHARED = (
    "ix_embeddings_vec_narrative_base",
    "ix_embeddings_vec_context_base",
    "ix_embeddings_vec_context_ctx",
    "ix_narratives_fts_kw",
    "ix_context_turns_fts_kw",
    "ix_context_turns_fts_ctx",
)


@dataclass(frozen=True)
class Own:
    """One index an agent's view gets at `OWN_ROWS` rows: on `table`, by `method` over `expression`, and the
    constants beyond the agent that select the view's rows (`where`)."""

    kind: str  # the view's kind and keyword view, as `fts_terms` counts them
    view: str
    table: str
    method: str
    expression: str
    where: str = ""


def _graph(kind: str, view: str, vectors: str) -> Own:
    return Own(kind, view, "embeddings", "hnsw", "vec halfvec_cosine_ops", f"kind = '{kind}' AND view = '{vectors}'")


# Each keyword view (kind, view of `fts_terms`) with the indexes its rows get: its GIN index and the graph of
# its vectors (a turn's words alone, its words in context).
OWN = (
    Own("narrative", "kw", "narratives", "gin", "fts_kw"),
    _graph("narrative", "kw", "base"),
    Own("context", "kw", "context_turns", "gin", "fts_kw"),
    _graph("context", "kw", "base"),
    Own("context", "kw_ctx", "context_turns", "gin", "fts_ctx"),
    _graph("context", "kw_ctx", "ctx"),
)


def quoted(value: str) -> str:
    """A SQL string literal (standard_conforming_strings, PostgreSQL's default since 9.1: only quotes double)."""
    if "\x00" in value:
        raise ValueError("a NUL character cannot be stored in PostgreSQL text")
    return "'" + value.replace("'", "''") + "'"


def owned_by(agent_id: str, alias: str = "") -> str:
    """The condition `{alias}agent_id = '…'` with the agent as a constant, as a query must say it for the planner to
    use the agent's own indexes."""
    return f"{alias}agent_id = {quoted(agent_id)}"


def name(agent_id: str, index: Own) -> str:
    """The name of one of an agent's own indexes (a digest: agent ids are any text, names at most 63 bytes)."""
    key = "\x00".join((agent_id, index.table, index.method, index.expression, index.where))
    return PREFIX + hashlib.sha256(key.encode()).hexdigest()[:24]


def statement(
    agent_id: str, index: Own, *, concurrently: bool = False, graph: tuple[int, int] = (HNSW_M, HNSW_EF_CONSTRUCTION)
) -> str:
    """CREATE INDEX for one of the agent's own indexes, over its rows alone (a graph's m and ef_construction:
    `graph`)."""
    where = " AND ".join(filter(None, (owned_by(agent_id), index.where)))
    settings = f" WITH (m = {int(graph[0])}, ef_construction = {int(graph[1])})" if index.method == "hnsw" else ""
    return (
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS {name(agent_id, index)} "
        f"ON {index.table} USING {index.method} ({index.expression}){settings} WHERE {where}"
    )


def existing(conn: Connection) -> dict[str, bool]:
    """The agents' own indexes there are, by name: whether each is valid (a concurrent build that failed leaves an
    invalid one behind)."""
    found = conn.execute(
        text(
            "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relnamespace = CAST(current_schema() AS regnamespace) AND c.relname LIKE :prefix"
        ),
        {"prefix": PREFIX + "%"},
    )
    return {str(r.relname): bool(r.indisvalid) for r in found}


def due(conn: Connection, rows: int | None = None) -> list[tuple[str, Own, int]]:
    """(agent, index, the view's rows) of every view with at least `rows` (`OWN_ROWS`) rows whose index is not there
    (or invalid), the largest views first. The views' sizes are the keyword index's counts (`fts_terms`), kept at
    write time."""
    have = {index for index, valid in existing(conn).items() if valid}
    found = conn.execute(
        text(
            "SELECT agent_id, kind, view, rows FROM fts_terms WHERE term = '' AND rows >= :rows "
            "ORDER BY rows DESC, agent_id, kind, view"
        ),
        {"rows": OWN_ROWS if rows is None else rows},
    )
    views = [(r.agent_id, r.kind, r.view, int(r.rows)) for r in found]
    return [
        (agent_id, index, size)
        for agent_id, kind, view, size in views
        for index in OWN
        if (index.kind, index.view) == (kind, view) and name(agent_id, index) not in have
    ]


def _usable(conn: Connection, index: Own) -> bool:
    """Whether the index can be made here: a graph needs pgvector's column."""
    if index.method != "hnsw":
        return True
    found = conn.execute(
        text(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'embeddings' AND column_name = 'vec'"
        )
    ).first()
    return found is not None


def create_due(
    conn: Connection, rows: int | None = None, *, graph: tuple[int, int] = (HNSW_M, HNSW_EF_CONSTRUCTION)
) -> list[str]:
    """Every index `due` names, in this transaction (writes to the tables wait for it); the names made."""
    made = []
    for agent_id, index, _size in due(conn, rows):
        if _usable(conn, index):
            conn.execute(text(statement(agent_id, index, graph=graph)))
            made.append(name(agent_id, index))
    return made


def drop_all(conn: Connection) -> None:
    """Drop every agent's own index and the shared ones of before (a bulk load builds them once at the end)."""
    for each in [*SHARED, *existing(conn)]:
        conn.execute(text(f"DROP INDEX IF EXISTS {each}"))


def restore_shared(conn: Connection, *, vectors: bool) -> None:
    """The layout before indexes per agent (migration 0012's downgrade; a benchmark's "before"): no agent's own
    index, one GIN index of each keyword column and (`vectors`: where pgvector's column is) one HNSW graph of each
    vector view, each over every agent's rows."""
    for each in existing(conn):
        conn.execute(text(f"DROP INDEX IF EXISTS {each}"))
    for table, column in (("narratives", "fts_kw"), ("context_turns", "fts_kw"), ("context_turns", "fts_ctx")):
        conn.execute(text(f"CREATE INDEX IF NOT EXISTS ix_{table}_{column} ON {table} USING gin ({column})"))
    if vectors:
        for vector_view, kind in (("base", "narrative"), ("base", "context"), ("ctx", "context")):
            conn.execute(
                text(
                    f"CREATE INDEX IF NOT EXISTS ix_embeddings_vec_{kind}_{vector_view} ON embeddings "
                    f"USING hnsw (vec halfvec_cosine_ops) WHERE kind = '{kind}' AND view = '{vector_view}'"
                )
            )


def build(engine: Engine, rows: int | None = None, *, most: int | None = None) -> list[str]:
    """Make every index `due` names without blocking writes (CREATE INDEX CONCURRENTLY); one builder at a time
    (another returns at once, having made nothing); an invalid index a failed build left is made again. The names
    made (none on SQLite).

    `most`: leave the indexes of views past this many rows, with a warning saying to run `tideline db upgrade`
    (a task has a time limit, and a graph of a view imported whole at a million rows takes longer than that;
    a view that grows row by row gets its indexes at `OWN_ROWS`, in seconds)."""
    if engine.dialect.name != "postgresql":
        return []
    made: list[str] = []
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if not conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": LOCK}).scalar():
            return made
        try:
            for left, valid in existing(conn).items():
                if not valid:
                    conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {left}"))
            for agent_id, index, size in due(conn, rows):
                if most is not None and size > most:
                    log.warning(
                        "agent %r's %s/%s view has %d rows and no %s index of its own: too large to build here; "
                        "run `tideline db upgrade` to build it",
                        agent_id,
                        index.kind,
                        index.view,
                        size,
                        index.method,
                    )
                    continue
                if _usable(conn, index):
                    conn.execute(text(statement(agent_id, index, concurrently=True)))
                    made.append(name(agent_id, index))
                    log.info("built agent %r's own %s index of %s/%s", agent_id, index.method, index.kind, index.view)
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK})
    return made
