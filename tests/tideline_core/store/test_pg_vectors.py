"""The vector layout for many agents on PostgreSQL: an exact scan of an agent's own rows until its view is large, then
a graph of its own, built without blocking writes, one builder at a time."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from psycopg import ClientCursor
from sqlalchemy import event, text

from tests.pgvector_server import pgvector_url  # noqa: F401 - the fixture
from tideline_core.service import maintenance
from tideline_core.store import pg_vectors
from tideline_core.store.database import Database
from tideline_core.store.embeddings import to_blob

MODEL = "test-vectors"


@pytest.fixture
def pg(pgvector_url: str) -> Iterator[Database]:  # noqa: F811 - the fixture imported above
    db = Database.open(pgvector_url)
    yield db
    db.close()


def put(db: Database, agent: str, n: int, seed: int) -> np.ndarray:
    """`n` random unit vectors as the agent's narratives seed * 1000 + 1.. (base view; ids are the table's, shared by
    every agent); the matrix, row i for narrative seed * 1000 + i + 1."""
    matrix = np.random.default_rng(seed).standard_normal((n, pg_vectors.DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    rows = [
        {"kind": "narrative", "row_id": seed * 1000 + i + 1, "agent_id": agent, "model": MODEL, "dim": pg_vectors.DIM,
         "vector": to_blob(v), "view": "base"}
        for i, v in enumerate(matrix)
    ]  # fmt: skip
    with db.write() as conn:
        pg_vectors.upsert_rows(conn, rows, matrix)
    return matrix


def nearest(db: Database, agent: str, query: np.ndarray, k: int = 10) -> list[int]:
    with db.read() as conn:
        return [row for row, _ in pg_vectors.nearest(conn, agent, "narrative", "base", MODEL, query, k)]


def exactly(matrix: np.ndarray, seed: int, query: np.ndarray, k: int = 10) -> list[int]:
    return [seed * 1000 + int(i) + 1 for i in np.argsort(-(matrix @ query), kind="stable")[:k]]


def plan(db: Database, agent: str, query: np.ndarray) -> str:
    """What PostgreSQL does for the agent's lookup (EXPLAIN ANALYZE of the very statement a search sends)."""
    sent: list[str] = []

    def keep(conn: object, cursor: ClientCursor, statement: str, parameters: object, *args: object) -> None:
        if "<=>" in statement:
            sent.append(ClientCursor(cursor.connection).mogrify(statement, parameters))  # type: ignore[arg-type]

    event.listen(db.engine, "before_cursor_execute", keep)
    try:
        nearest(db, agent, query)
    finally:
        event.remove(db.engine, "before_cursor_execute", keep)
    with db.read() as conn:
        conn.execute(text("SET LOCAL hnsw.iterative_scan = 'relaxed_order'"))
        return "\n".join(line[0] for line in conn.execute(text("EXPLAIN (ANALYZE, COSTS OFF) " + sent[-1])))


def a_query(seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).standard_normal(pg_vectors.DIM).astype(np.float32)
    return q / np.linalg.norm(q)


def test_an_agent_below_the_threshold_is_searched_exactly_reading_only_its_own_rows(pg: Database) -> None:
    alice = put(pg, "alice", 300, seed=1)
    put(pg, "bob", 300, seed=2)
    q = a_query(3)
    assert nearest(pg, "alice", q) == exactly(alice, 1, q)
    shown = plan(pg, "alice", q)
    assert "ix_embeddings_agent_kind_view_id" in shown and "hnsw" not in shown.lower()
    assert "'alice'" in shown and "rows=300" in shown  # its 300 rows are read, not bob's


def test_a_view_grown_to_the_threshold_gets_a_graph_of_its_own_that_its_searches_walk(pg: Database) -> None:
    alice = put(pg, "alice", 300, seed=1)
    bob = put(pg, "bob", 50, seed=2)
    assert pg_vectors.build_graphs(pg.engine, rows=200) == [pg_vectors.graph_name("alice", "narrative", "base")]
    assert pg_vectors.build_graphs(pg.engine, rows=200) == []  # built once
    q = a_query(3)
    assert f"Index Scan using {pg_vectors.graph_name('alice', 'narrative', 'base')}" in plan(pg, "alice", q)
    assert "ix_vec_agent_" not in plan(pg, "bob", q)  # bob's rows are in no graph: still his exact scan
    assert nearest(pg, "alice", q) == exactly(alice, 1, q)  # a walk over 300 rows keeping 400 candidates finds them all
    assert nearest(pg, "bob", q) == exactly(bob, 2, q)


def test_an_agent_id_is_a_constant_in_the_sql_whatever_it_holds(pg: Database) -> None:
    odd = "o'brien'); DROP TABLE embeddings; --"
    rows = put(pg, odd, 250, seed=4)
    put(pg, "o", 20, seed=5)
    assert pg_vectors.build_graphs(pg.engine, rows=200) == [pg_vectors.graph_name(odd, "narrative", "base")]
    q = a_query(6)
    assert nearest(pg, odd, q) == exactly(rows, 4, q)
    assert len(nearest(pg, "o", q, k=50)) == 20  # another agent's rows stay its own
    with pg.read() as conn:
        assert conn.execute(text("SELECT count(*) FROM embeddings")).scalar_one() == 270


def test_a_graph_a_failed_build_left_invalid_is_built_again(pg: Database) -> None:
    put(pg, "alice", 250, seed=1)
    (name,) = pg_vectors.build_graphs(pg.engine, rows=200)
    with pg.write() as conn:  # what an interrupted CREATE INDEX CONCURRENTLY leaves behind
        conn.execute(
            text("UPDATE pg_index SET indisvalid = false WHERE indexrelid = CAST(:name AS regclass)"), {"name": name}
        )
    with pg.read() as conn:
        assert pg_vectors.graphs(conn) == {name: False}
    assert pg_vectors.build_graphs(pg.engine, rows=200) == [name]
    with pg.read() as conn:
        assert pg_vectors.graphs(conn) == {name: True}


def test_one_builder_at_a_time_another_returns_at_once_and_builds_nothing(pg: Database) -> None:
    put(pg, "alice", 250, seed=1)
    with pg.engine.connect() as holder:
        holder.execute(text("SELECT pg_advisory_lock(:key)"), {"key": pg_vectors.GRAPH_LOCK})
        assert pg_vectors.build_graphs(pg.engine, rows=200) == []
        holder.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": pg_vectors.GRAPH_LOCK})
    with pg.read() as conn:
        assert pg_vectors.graphs(conn) == {}
    assert len(pg_vectors.build_graphs(pg.engine, rows=200)) == 1


def test_the_upgrade_drops_the_graphs_every_agent_shared_and_builds_the_large_agents_own(
    pg: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(pg, "alice", 250, seed=1)
    put(pg, "bob", 30, seed=2)
    with pg.write() as conn:  # a store as the release before graphs per agent left it
        conn.execute(
            text(f"CREATE INDEX {pg_vectors.SHARED_GRAPHS[0]} ON embeddings USING hnsw (vec halfvec_cosine_ops) "
                 "WHERE kind = 'narrative' AND view = 'base'")
        )  # fmt: skip
        conn.execute(text("UPDATE alembic_version SET version_num = '0011'"))
    monkeypatch.setattr(pg_vectors, "GRAPH_ROWS", 200)
    report = maintenance.upgrade(pg.engine.url.render_as_string(hide_password=False))
    assert report.vector_graphs == 1
    with pg.read() as conn:
        names = set(
            conn.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'embeddings'")).scalars().all()
        )
    assert pg_vectors.SHARED_GRAPHS[0] not in names
    assert pg_vectors.graph_name("alice", "narrative", "base") in names
    assert pg_vectors.graph_name("bob", "narrative", "base") not in names
