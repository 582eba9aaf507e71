"""Indexes for many agents on PostgreSQL: a small agent's searches read its own rows, a large agent's view gets a
vector graph and a keyword index of its own, built without blocking writes, one builder at a time."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from psycopg import ClientCursor
from sqlalchemy import event, text

from tests.pgvector_server import pgvector_url  # noqa: F401 - the fixture
from tideline_core.domain.inputs import NarrativeIn
from tideline_core.search import pg_keywords
from tideline_core.service import maintenance
from tideline_core.store import agent_indexes, pg_vectors
from tideline_core.store.agent_indexes import OWN
from tideline_core.store.database import Database
from tideline_core.store.embeddings import to_blob
from tideline_core.store.narratives import insert_narrative
from tideline_core.text.terms import analyze

MODEL = "test-vectors"
WORDS = ("whale", "coffee", "garden", "river", "piano", "winter", "harbor", "lantern")
RARE = " zebra"  # in one memory of 40: a word an index lookup finds faster than reading every row
NARRATIVES_GIN, NARRATIVES_GRAPH = OWN[0], OWN[1]


@pytest.fixture
def pg(pgvector_url: str) -> Iterator[Database]:  # noqa: F811 - the fixture imported above
    db = Database.open(pgvector_url)
    yield db
    db.close()


def put(db: Database, agent: str, n: int, seed: int) -> tuple[list[int], np.ndarray]:
    """`n` memories of the agent (a few words each, in its keyword index) with random unit vectors: their ids and
    the matrix, row i the vector of ids[i]. The tables' statistics are brought up to date, as autovacuum does."""
    rng = np.random.default_rng(seed)
    with db.write() as conn:
        ids = [
            insert_narrative(conn, agent, NarrativeIn(gesture=" ".join(rng.choice(WORDS, 3)) + RARE * (i % 40 == 0))).id
            for i in range(n)
        ]
    matrix = rng.standard_normal((n, pg_vectors.DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    rows = [
        {"kind": "narrative", "row_id": row, "agent_id": agent, "model": MODEL, "dim": pg_vectors.DIM,
         "vector": to_blob(v), "view": "base"}
        for row, v in zip(ids, matrix, strict=True)
    ]  # fmt: skip
    with db.write() as conn:
        pg_vectors.upsert_rows(conn, rows, matrix)
        conn.execute(text("ANALYZE narratives, embeddings"))
    return ids, matrix


def nearest(db: Database, agent: str, query: np.ndarray, k: int = 10) -> list[int]:
    with db.read() as conn:
        return [row for row, _ in pg_vectors.nearest(conn, agent, "narrative", "base", MODEL, query, k)]


def exactly(ids: list[int], matrix: np.ndarray, query: np.ndarray, k: int = 10) -> list[int]:
    return [ids[int(i)] for i in np.argsort(-(matrix @ query), kind="stable")[:k]]


def keyword(db: Database, agent: str, word: str) -> list[int]:
    with db.read() as conn:
        terms = dict.fromkeys(analyze(word), 1.0)  # as the index holds it: whale → whal
        return [row for row, _ in pg_keywords.search_view(conn, agent, "narrative", "kw", terms, 1000)]


def plan(db: Database, ask: Callable[[], object], mark: str) -> str:
    """What PostgreSQL does for the statement holding `mark` that `ask` sends (EXPLAIN ANALYZE of that very text).

    Sequential scans and sorts are off: a table of a few hundred rows is cheapest read whole, and a few hundred
    cosines cheapest sorted, where a table of many agents' rows is not (bench/tenants.py prints the plans at
    that size); what is left is the index a query can use."""
    sent: list[str] = []

    def keep(conn: object, cursor: ClientCursor, statement: str, parameters: object, *args: object) -> None:
        if mark in statement:
            sent.append(ClientCursor(cursor.connection).mogrify(statement, parameters))  # type: ignore[arg-type]

    event.listen(db.engine, "before_cursor_execute", keep)
    try:
        ask()
    finally:
        event.remove(db.engine, "before_cursor_execute", keep)
    with db.read() as conn:
        conn.execute(text("SET LOCAL hnsw.iterative_scan = 'relaxed_order'"))
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        conn.execute(text("SET LOCAL enable_sort = off"))
        return "\n".join(line[0] for line in conn.execute(text("EXPLAIN (ANALYZE, COSTS OFF) " + sent[-1])))


def a_query(seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).standard_normal(pg_vectors.DIM).astype(np.float32)
    return q / np.linalg.norm(q)


def index_names(db: Database) -> set[str]:
    with db.read() as conn:
        return set(conn.execute(text("SELECT indexname FROM pg_indexes")).scalars().all())


def test_a_small_agents_searches_read_its_own_rows_through_its_btrees(pg: Database) -> None:
    ids, matrix = put(pg, "alice", 120, seed=1)
    put(pg, "bob", 120, seed=2)
    q = a_query(3)
    assert nearest(pg, "alice", q) == exactly(ids, matrix, q)
    dense = plan(pg, lambda: nearest(pg, "alice", q), "<=>")
    assert "ix_embeddings_agent_kind_view_id" in dense and "'alice'" in dense and "rows=120" in dense
    assert "hnsw" not in dense.lower()
    assert set(keyword(pg, "alice", "whale")) <= set(ids) and keyword(pg, "alice", "whale")
    words = plan(pg, lambda: keyword(pg, "alice", "whale"), "ts_filter")
    assert "ix_narratives_agent" in words and "fts_kw" not in " ".join(index_names(pg))  # no GIN of every agent's


def test_a_view_grown_to_the_threshold_gets_indexes_of_its_own_that_its_searches_use(pg: Database) -> None:
    ids, matrix = put(pg, "alice", 240, seed=1)
    bob_ids, bob_matrix = put(pg, "bob", 40, seed=2)
    own = [agent_indexes.name("alice", NARRATIVES_GIN), agent_indexes.name("alice", NARRATIVES_GRAPH)]
    assert agent_indexes.build(pg.engine, rows=200) == own
    assert agent_indexes.build(pg.engine, rows=200) == []  # built once
    q = a_query(3)
    assert f"Index Scan using {own[1]}" in plan(pg, lambda: nearest(pg, "alice", q), "<=>")
    assert own[0] in plan(pg, lambda: keyword(pg, "alice", "zebra"), "ts_filter")
    assert "ix_agent_" not in plan(pg, lambda: nearest(pg, "bob", q), "<=>")  # bob's rows are in no index of alice's
    assert "ix_agent_" not in plan(pg, lambda: keyword(pg, "bob", "zebra"), "ts_filter")
    assert nearest(pg, "alice", q) == exactly(ids, matrix, q)  # a walk over 240 rows keeping 400 finds them all
    assert nearest(pg, "bob", q) == exactly(bob_ids, bob_matrix, q)
    assert set(keyword(pg, "alice", "zebra")) == set(ids[::40]) and set(keyword(pg, "bob", "zebra")) == {bob_ids[0]}


def test_an_agent_id_is_a_constant_in_the_sql_whatever_it_holds(pg: Database) -> None:
    odd = "o'brien'); DROP TABLE embeddings; --"
    ids, matrix = put(pg, odd, 210, seed=4)
    put(pg, "o", 20, seed=5)
    assert len(agent_indexes.build(pg.engine, rows=200)) == 2
    q = a_query(6)
    assert nearest(pg, odd, q) == exactly(ids, matrix, q)
    assert set(keyword(pg, odd, "river")) <= set(ids) and keyword(pg, odd, "river")
    assert len(nearest(pg, "o", q, k=50)) == 20  # another agent's rows stay its own
    with pg.read() as conn:
        assert conn.execute(text("SELECT count(*) FROM embeddings")).scalar_one() == 230


def test_an_index_a_failed_build_left_invalid_is_built_again(pg: Database) -> None:
    put(pg, "alice", 210, seed=1)
    gin, graph = agent_indexes.build(pg.engine, rows=200)
    with pg.write() as conn:  # what an interrupted CREATE INDEX CONCURRENTLY leaves behind
        conn.execute(
            text("UPDATE pg_index SET indisvalid = false WHERE indexrelid = CAST(:name AS regclass)"), {"name": graph}
        )
    with pg.read() as conn:
        assert agent_indexes.existing(conn) == {gin: True, graph: False}
    assert agent_indexes.build(pg.engine, rows=200) == [graph]
    with pg.read() as conn:
        assert agent_indexes.existing(conn) == {gin: True, graph: True}


def test_one_builder_at_a_time_another_returns_at_once_and_builds_nothing(pg: Database) -> None:
    put(pg, "alice", 210, seed=1)
    with pg.engine.connect() as holder:
        holder.execute(text("SELECT pg_advisory_lock(:key)"), {"key": agent_indexes.LOCK})
        assert agent_indexes.build(pg.engine, rows=200) == []
        holder.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": agent_indexes.LOCK})
    with pg.read() as conn:
        assert agent_indexes.existing(conn) == {}
    assert len(agent_indexes.build(pg.engine, rows=200)) == 2


def test_the_upgrade_drops_the_indexes_every_agent_shared_and_builds_the_large_agents_own(
    pg: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(pg, "alice", 210, seed=1)
    put(pg, "bob", 30, seed=2)
    with pg.write() as conn:  # a store as the release before indexes per agent left it
        conn.execute(text("CREATE INDEX ix_narratives_fts_kw ON narratives USING gin (fts_kw)"))
        conn.execute(
            text("CREATE INDEX ix_embeddings_vec_narrative_base ON embeddings USING hnsw (vec halfvec_cosine_ops) "
                 "WHERE kind = 'narrative' AND view = 'base'")
        )  # fmt: skip
        conn.execute(text("UPDATE alembic_version SET version_num = '0011'"))
    monkeypatch.setattr(agent_indexes, "OWN_ROWS", 200)
    report = maintenance.upgrade(pg.engine.url.render_as_string(hide_password=False))
    assert report.agent_indexes == 2
    names = index_names(pg)
    assert not names & set(agent_indexes.SHARED)
    assert {agent_indexes.name("alice", NARRATIVES_GIN), agent_indexes.name("alice", NARRATIVES_GRAPH)} <= names
    assert not {agent_indexes.name("bob", NARRATIVES_GIN), agent_indexes.name("bob", NARRATIVES_GRAPH)} & names


def test_going_back_to_the_indexes_every_agent_shared_keeps_every_search_answering_the_same(pg: Database) -> None:
    ids, matrix = put(pg, "alice", 210, seed=1)
    agent_indexes.build(pg.engine, rows=200)
    q = a_query(7)
    dense, words = nearest(pg, "alice", q), keyword(pg, "alice", "zebra")
    with pg.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:  # migration 0012's downgrade
        agent_indexes.restore_shared(conn, vectors=True)
    names = index_names(pg)
    assert set(agent_indexes.SHARED) <= names and not [n for n in names if n.startswith(agent_indexes.PREFIX)]
    assert nearest(pg, "alice", q) == dense == exactly(ids, matrix, q)
    assert keyword(pg, "alice", "zebra") == words


def test_a_view_too_large_for_a_task_is_left_to_the_upgrade_with_a_warning_that_says_so(
    pg: Database, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=agent_indexes.__name__)
    put(pg, "alice", 210, seed=1)
    assert agent_indexes.build(pg.engine, rows=200, most=205) == []  # the periodic task's bound: 210 rows is past it
    assert "'alice'" in caplog.text and "run `tideline db upgrade`" in caplog.text
    assert len(agent_indexes.build(pg.engine, rows=200)) == 2  # the upgrade's: no bound
