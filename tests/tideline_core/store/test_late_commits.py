"""A row whose transaction commits after a newer row's is still found by the in-memory indexes.

On PostgreSQL (where the in-memory vector index still holds vectors of a size pgvector's column does
not take, `search.pg_source`) this is real: two transactions, the older id committing last. SQLite
serializes writers, so there the same visibility order is staged by taking a committed row away and
putting it back under its own id.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import delete, insert, select

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.domain.records import PendingRow
from tideline_core.search.keyword_index import KeywordIndex
from tideline_core.search.vector_index import VectorIndex
from tideline_core.store.catchup import high_water
from tideline_core.store.database import Database
from tideline_core.store.embeddings import save_embeddings
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.schema import ContextTurn, Embedding
from tideline_core.store.turns import insert_turns
from tideline_core.text.terms import analyze

MODEL = "test-axes"
AT = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def axis(i: int) -> np.ndarray:
    v = np.zeros((1, 8), dtype=np.float32)
    v[0, i] = 1.0
    return v


def turn(content: str, session: str = "s1") -> ContextTurnIn:
    return ContextTurnIn(role="user", speaker="Ann", content=content, session_id=session, created_at=AT)


def keyword_ids(keywords: KeywordIndex, db: Database, kind: str, word: str) -> list[int]:
    with db.read() as conn:
        version = high_water(conn)
    terms = dict.fromkeys(analyze(word), 1.0)
    return [i for i, _ in keywords.search_views("alice", kind, terms, 10, version=version)["kw"]]


def dense_ids(vectors: VectorIndex, db: Database, i: int) -> list[int]:
    with db.read() as conn:
        version = high_water(conn)
    return [row for row, score in vectors.search("alice", "context", axis(i)[0], 10, version=version) if score > 0.5]


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    db = Database.open(f"sqlite:///{tmp_path / 'late.db'}")
    yield db
    db.close()


@pytest.fixture
def postgres_db(postgres_without_pgvector_url: str) -> Iterator[Database]:
    db = Database.open(postgres_without_pgvector_url)
    yield db
    db.close()


@contextmanager
def staged_late(db: Database, table: Any, row_id: int) -> Iterator[None]:
    """SQLite: row `row_id` is invisible inside the block and visible again, under the same id, after it."""
    with db.write() as conn:
        row = conn.execute(select(table).where(table.c.id == row_id)).mappings().one()
        conn.execute(delete(table).where(table.c.id == row_id))
    yield
    with db.write() as conn:
        conn.execute(insert(table).values(**row))


def test_sqlite_a_turn_and_its_vector_that_appear_below_the_newest_id_are_found(sqlite_db: Database) -> None:
    db = sqlite_db
    keywords, vectors = KeywordIndex(db), VectorIndex(db, MODEL)
    with db.write() as conn:
        late, newer = insert_turns(conn, "alice", [turn("lighthouse"), turn("harbour")])
        save_embeddings(conn, "context", [PendingRow("context", late, "alice", "")], axis(0), MODEL)
        save_embeddings(conn, "context", [PendingRow("context", newer, "alice", "")], axis(1), MODEL)
    with db.read() as conn:
        late_vector = conn.execute(select(Embedding.id).where(Embedding.row_id == late)).scalar_one()
    with staged_late(db, ContextTurn.__table__, late), staged_late(db, Embedding.__table__, late_vector):
        assert keyword_ids(keywords, db, "context", "harbour") == [newer]
        assert keyword_ids(keywords, db, "context", "lighthouse") == []
        assert dense_ids(vectors, db, 1) == [newer] and dense_ids(vectors, db, 0) == []
    assert keyword_ids(keywords, db, "context", "lighthouse") == [late]
    assert dense_ids(vectors, db, 0) == [late]


def test_postgres_rows_whose_transaction_commits_after_a_newer_one_are_found(postgres_db: Database) -> None:
    db = postgres_db
    keywords, vectors = KeywordIndex(db), VectorIndex(db, MODEL)
    with db.write() as conn:
        (first,) = insert_turns(conn, "alice", [turn("anchor")])
    slow_write = db.write()  # an older writer, still open: a session's turns are indexed one writer at a time
    slow = slow_write.__enter__()
    try:
        (late_turn,) = insert_turns(slow, "alice", [turn("lighthouse")])
        save_embeddings(slow, "context", [PendingRow("context", first, "alice", "")], axis(0), MODEL)
        late_memory = insert_narrative(slow, "alice", NarrativeIn(gesture="painted the lighthouse")).id
        with db.write() as conn:  # a newer writer, of another session, committing first
            (newer_turn,) = insert_turns(conn, "alice", [turn("harbour", session="s2")])
            save_embeddings(conn, "context", [PendingRow("context", newer_turn, "alice", "")], axis(1), MODEL)
            newer_memory = insert_narrative(conn, "alice", NarrativeIn(gesture="sailed to the harbour")).id
        assert late_turn < newer_turn and late_memory < newer_memory
        assert keyword_ids(keywords, db, "context", "harbour") == [newer_turn]
        assert keyword_ids(keywords, db, "narrative", "harbour") == [newer_memory]
        assert dense_ids(vectors, db, 1) == [newer_turn] and dense_ids(vectors, db, 0) == []
    except BaseException as exc:
        slow_write.__exit__(type(exc), exc, exc.__traceback__)
        raise
    slow_write.__exit__(None, None, None)
    assert keyword_ids(keywords, db, "context", "lighthouse") == [late_turn]
    assert keyword_ids(keywords, db, "narrative", "lighthouse") == [late_memory]
    assert dense_ids(vectors, db, 0) == [first]
