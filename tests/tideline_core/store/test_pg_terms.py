"""PostgreSQL's keyword index is written with the rows: counted once, whatever commits or rolls back beside it."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from tests.pgvector_server import pgvector_url  # noqa: F401 - the fixture
from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn, parse
from tideline_core.domain.memory_text import turn_text
from tideline_core.store import keywords
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.turns import insert_turns
from tideline_core.text.terms import analyze

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def pg(pgvector_url: str) -> Iterator[Database]:  # noqa: F811 - the fixture imported above
    db = Database.open(pgvector_url)
    yield db
    db.close()


def counted(db: Database, agent: str, kind: str, view: str) -> dict[str, tuple[int, int]]:
    """`fts_terms` of one view: term → (rows, tokens), terms counted down to nothing left out."""
    with db.read() as conn:
        found = conn.execute(
            text(
                "SELECT term, rows, tokens FROM fts_terms WHERE agent_id = :a AND kind = :k AND view = :v "
                "AND (rows <> 0 OR tokens <> 0)"
            ),
            {"a": agent, "k": kind, "v": view},
        )
        return {r.term: (int(r.rows), int(r.tokens)) for r in found}


def recounted(db: Database, agent: str, table: str, column: str) -> dict[str, tuple[int, int]]:
    """What `fts_terms` must hold for one view, counted again from the rows' tsvectors."""
    with db.read() as conn:
        total = conn.execute(
            text(f"SELECT count(*), coalesce(sum({column}_len), 0) FROM {table} WHERE agent_id = :a"), {"a": agent}
        ).one()
        terms = conn.execute(
            text(
                f"SELECT term, count(*) AS n FROM {table}, unnest(tsvector_to_array({column})) AS term "
                "WHERE agent_id = :a GROUP BY term"
            ),
            {"a": agent},
        )
        return {"": (int(total[0]), int(total[1])), **{r.term: (int(r.n), 0) for r in terms}}


def windows(db: Database, agent: str) -> dict[int, tuple[set[str], int]]:
    with db.read() as conn:
        found = conn.execute(
            text(
                "SELECT id, tsvector_to_array(fts_ctx) AS terms, fts_ctx_len AS n FROM context_turns "
                "WHERE agent_id = :a"
            ),
            {"a": agent},
        )
        return {int(r.id): (set(r.terms), int(r.n)) for r in found}


def expected_windows(db: Database, agent: str) -> dict[int, tuple[set[str], int]]:
    """Each turn's window as the index defines it: the turn before it in its session, then the turn."""
    with db.read() as conn:
        found = conn.execute(
            text(
                "SELECT id, session_id, speaker, content FROM context_turns WHERE agent_id = :a "
                "ORDER BY session_id, created_at, id"
            ),
            {"a": agent},
        ).all()
    out: dict[int, tuple[set[str], int]] = {}
    before: list[str] = []
    session = None
    for r in found:
        own = analyze(turn_text(r.speaker, r.content))
        window = (before if r.session_id == session else []) + own
        out[int(r.id)] = (set(window), len(window))
        before, session = own, r.session_id
    return out


def memory(gesture: str) -> NarrativeIn:
    return parse(NarrativeIn, {"gesture": gesture})


def turn(content: str, at: datetime, session: str = "s1") -> ContextTurnIn:
    fields = {"role": "user", "content": content, "session_id": session, "created_at": at.isoformat()}
    return parse(ContextTurnIn, fields)


def test_a_written_memory_is_indexed_and_counted_when_its_write_commits(pg: Database) -> None:
    with pg.write() as conn:
        insert_narrative(conn, "alice", memory("blue whale song"))
        insert_narrative(conn, "alice", memory("鲸鱼的歌声"))
    with pg.read() as conn:
        assert not keywords.has_unindexed(conn, "alice")
    assert counted(pg, "alice", "narrative", "kw") == recounted(pg, "alice", "narratives", "fts_kw")
    assert counted(pg, "alice", "narrative", "kw")[""][0] == 2


def test_a_write_that_rolls_back_counts_nothing_and_leaves_nothing_for_the_next_write(pg: Database) -> None:
    with pytest.raises(RuntimeError), pg.write() as conn:
        insert_narrative(conn, "alice", memory("a memory never kept"))
        raise RuntimeError("the caller's write fails after the insert")
    with pg.trial() as conn:  # a dry run: what it would write is rolled back, its counts with it
        insert_narrative(conn, "alice", memory("a dry run's memory"))
    for _ in range(3):  # the pool hands back the same connection: nothing carried over
        with pg.write() as conn:
            insert_narrative(conn, "alice", memory("kept"))
    assert counted(pg, "alice", "narrative", "kw") == {"": (3, 3), "kept": (3, 0)}


def test_writers_of_one_agent_and_one_session_at_once_count_each_row_once_and_see_each_others_turns(
    pg: Database,
) -> None:
    writers, each = 4, 12
    barrier = threading.Barrier(writers)
    failures: list[BaseException] = []

    def write(k: int) -> None:
        try:
            barrier.wait()
            for i in range(each):
                at = START + timedelta(seconds=i * writers + k)  # the session's turns interleave across writers
                with pg.write() as conn:
                    insert_narrative(conn, "alice", memory(f"writer{k} note{i} shared words"))
                    insert_turns(conn, "alice", [turn(f"writer{k} said line{i} 共同的话", at)])
        except BaseException as exc:  # a deadlock or a lost count: the test reports it
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(writers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures, failures
    assert counted(pg, "alice", "narrative", "kw") == recounted(pg, "alice", "narratives", "fts_kw")
    assert counted(pg, "alice", "context", "kw") == recounted(pg, "alice", "context_turns", "fts_kw")
    assert counted(pg, "alice", "context", "kw_ctx") == recounted(pg, "alice", "context_turns", "fts_ctx")
    assert windows(pg, "alice") == expected_windows(pg, "alice")
    assert counted(pg, "alice", "narrative", "kw")[""][0] == writers * each


def test_a_turn_stored_late_joins_the_window_of_the_turn_after_it(pg: Database) -> None:
    with pg.write() as conn:
        insert_turns(conn, "alice", [turn("first line", START), turn("third line", START + timedelta(minutes=2))])
    with pg.write() as conn:  # arrives after the turn that follows it
        insert_turns(conn, "alice", [turn("second line", START + timedelta(minutes=1))])
    assert windows(pg, "alice") == expected_windows(pg, "alice")
    assert counted(pg, "alice", "context", "kw_ctx") == recounted(pg, "alice", "context_turns", "fts_ctx")
    assert Counter(counted(pg, "alice", "context", "speaker")) == Counter({"user": (3, 0)})
