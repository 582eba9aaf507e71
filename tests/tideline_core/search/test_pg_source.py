"""The ranking over PostgreSQL's own indexes (`pg_source`): BM25 over jieba tsvectors, HNSW vectors, read per query.

A deterministic bag-of-words embedder (384 dimensions, the HNSW column's size) stands in for e5,
so rankings can be compared exactly with the ranking over in-memory indexes of the same rows in SQLite.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import event, text

from tests.pgvector_server import pgvector_url  # noqa: F401 - the fixture
from tests.words_embedder import WordsEmbedder
from tideline_core.compose import compose
from tideline_core.domain.inputs import ContextTurnIn, ConversationLine, NarrativeIn, SearchIn, parse
from tideline_core.ingest import embed_pending
from tideline_core.search import memory_source, pg_source
from tideline_core.search.hybrid import HybridSearch
from tideline_core.search.pg_source import PostgresSource, side_by_side
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
from tideline_core.store import pg_terms
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.turns import insert_turns

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def pg(pgvector_url: str) -> Iterator[Database]:  # noqa: F811 - the fixture imported above
    db = Database.open(pgvector_url)
    yield db
    db.close()


def memory(gesture: str, at: datetime = START, **extra: object) -> NarrativeIn:
    return parse(NarrativeIn, {"gesture": gesture, "occurred_at": at.isoformat(), **extra})


def turn(content: str, session: str, speaker: str, at: datetime) -> ContextTurnIn:
    return parse(
        ContextTurnIn,
        {"role": "user", "content": content, "session_id": session, "speaker": speaker, "created_at": at.isoformat()},
    )


def ask(searcher: HybridSearch, agent: str, query: str = "", **params: object) -> list[tuple[str, int]]:
    outcome = searcher.search(agent, parse(SearchIn, {"query": query, **params}))
    return [(h.kind, h.id) for h in outcome.hits]


def write_memories(db: Database, agent: str, texts: Sequence[str], at: datetime = START) -> list[int]:
    with db.write() as conn:
        return [insert_narrative(conn, agent, memory(t, at + timedelta(days=i))).id for i, t in enumerate(texts)]


def test_chinese_one_and_two_character_words_and_english_words_are_found(pg: Database) -> None:
    ids = write_memories(pg, "alice", ["我养了一只猫", "今天喝了咖啡", "We ran the marathon in Berlin", "天气很好"])
    searcher = pg_source.searcher(pg, WordsEmbedder())
    assert ask(searcher, "alice", "猫", mode="keyword")[0] == ("narrative", ids[0])
    assert ask(searcher, "alice", "咖啡", mode="keyword")[0] == ("narrative", ids[1])
    assert ask(searcher, "alice", "marathons", mode="keyword")[0] == ("narrative", ids[2])  # stemmed, as BM25 is
    # A single character inside a word jieba keeps whole (天气) is found by the store's substring lookup.
    assert ask(searcher, "alice", "气", mode="keyword") == [("narrative", ids[3])]


def test_an_agent_never_finds_another_agents_rows(pg: Database) -> None:
    write_memories(pg, "alice", ["blue whale song"])
    (bob,) = write_memories(pg, "bob", ["blue whale song"])
    embed_pending(pg, WordsEmbedder())
    searcher = pg_source.searcher(pg, WordsEmbedder())
    for mode in ("keyword", "dense", "hybrid"):
        assert ask(searcher, "bob", "whale", mode=mode) == [("narrative", bob)]
    assert ask(searcher, "carol", "whale") == []


def test_since_and_until_bound_every_signal(pg: Database) -> None:
    ids = write_memories(pg, "alice", [f"garden day {i}" for i in range(5)])
    embed_pending(pg, WordsEmbedder())
    searcher = pg_source.searcher(pg, WordsEmbedder())
    since, until = START + timedelta(days=1), START + timedelta(days=3)
    for mode in ("keyword", "dense", "hybrid"):
        found = ask(searcher, "alice", "garden", mode=mode, since=since.isoformat(), until=until.isoformat())
        assert sorted(i for _, i in found) == ids[1:4], mode


def test_kinds_choose_narratives_or_turns(pg: Database) -> None:
    (n,) = write_memories(pg, "alice", ["the river at dawn"])
    with pg.write() as conn:
        (t,) = insert_turns(conn, "alice", [turn("we walked by the river", "s1", "Bob", START)])
    embed_pending(pg, WordsEmbedder())
    searcher = pg_source.searcher(pg, WordsEmbedder())
    assert ask(searcher, "alice", "river", kinds="narratives") == [("narrative", n)]
    assert ask(searcher, "alice", "river", kinds="context") == [("context", t)]
    assert sorted(ask(searcher, "alice", "river")) == [("context", t), ("narrative", n)]


def test_a_row_written_after_a_search_is_found_by_the_next_one(pg: Database) -> None:
    searcher = pg_source.searcher(pg, WordsEmbedder())
    write_memories(pg, "alice", ["一只猫"])
    assert ask(searcher, "alice", "邮件", mode="keyword") == []
    (new,) = write_memories(pg, "alice", ["收到一封邮件"])
    assert ask(searcher, "alice", "邮件", mode="keyword") == [("narrative", new)]
    with pg.write() as conn:
        (late,) = insert_turns(conn, "alice", [turn("邮件已经发出", "s1", "小明", START)])
    assert ("context", late) in ask(searcher, "alice", "邮件", mode="keyword")


def test_the_process_keeps_no_index_of_its_own(pg: Database) -> None:
    write_memories(pg, "alice", ["blue whale song"])
    embed_pending(pg, WordsEmbedder())
    searcher = pg_source.searcher(pg, WordsEmbedder())
    assert ask(searcher, "alice", "whale")
    assert isinstance(searcher.source, PostgresSource)
    assert searcher.source.others.index.rows("alice", "narrative") == 0
    assert searcher.source.others.keywords._shards == {}


def test_vectors_saved_by_the_ingest_path_fill_the_pgvector_column(pg: Database) -> None:
    write_memories(pg, "alice", ["one", "two"])
    with pg.write() as conn:
        insert_turns(conn, "alice", [turn("three", "s1", "Bob", START)])
    embed_pending(pg, WordsEmbedder())
    with pg.read() as conn:
        missing = conn.execute(text("SELECT count(*) FROM embeddings WHERE vec IS NULL")).scalar_one()
        views = conn.execute(text("SELECT count(*) FROM embeddings")).scalar_one()
    assert (missing, views) == (0, 4)  # two memories, and a turn's two views


# A small constructed conversation and memories in both languages; every signal has something to do.
SESSIONS = {
    "s1": [
        ("Caroline", "I went to the LGBTQ support group yesterday, it was powerful."),
        ("Melanie", "That sounds great! What happened there?"),
        ("Caroline", "People shared transgender stories; I felt accepted."),
        ("Melanie", "I painted a sunrise over the lake last week."),
    ],
    "s2": [
        ("小明", "我同事的电话是19880466415，有事找他。"),
        ("小红", "好的，我记下了。"),
        ("小明", "我同事的生日是6月11号，我们准备礼物。"),
        ("小红", "那我们去公园散步吧，天气很好。"),
    ],
    "s3": [
        ("Caroline", "My sister is running a marathon in October 2025."),
        ("Melanie", "Wow, a marathon! Is she training in the park?"),
        ("Caroline", "Yes, every morning with coffee after."),
    ],
}
MEMORIES = [
    "Melanie loves painting sunrises",
    "小明的同事喜欢咖啡",
    "Caroline joined a support group",
    "公园里有很多猫",
]
QUESTIONS = [
    "What did Melanie paint?",
    "When is the marathon?",
    "那个电话是19880466415的人，生日是哪天？",
    "support group",
    "咖啡",
    "Caroline's sister running in October 2025",
    "what did Caroline say on 21 March 2026",
    "公园 散步",
]


def _load(db: Database) -> None:
    write_memories(db, "alice", MEMORIES)
    with db.write() as conn:
        for s, (name, lines) in enumerate(SESSIONS.items()):
            base = START + timedelta(days=10 * s)
            turns = [turn(content, name, who, base + timedelta(minutes=i)) for i, (who, content) in enumerate(lines)]
            insert_turns(conn, "alice", turns)
    embed_pending(db, WordsEmbedder())


def test_rankings_match_the_in_memory_search_over_the_same_rows(pg: Database, tmp_path: Path) -> None:
    lite = Database.open(f"sqlite:///{tmp_path / 'same.db'}")
    try:
        _load(lite)
        _load(pg)
        # Both cross the languages: 咖啡 also asks for "coffee", held by an English turn of the same store.
        memory_search = memory_source.searcher(lite, WordsEmbedder())
        database_search = pg_source.searcher(pg, WordsEmbedder())
        dialogue = [
            ConversationLine(speaker="小红", text="上次说到同事", is_self=False),
            ConversationLine(speaker="me", text="他的生日？", is_self=True),
        ]
        compared, seen = 0, set()
        for kinds in ("all", "context"):
            for mode in ("keyword", "dense", "hybrid"):
                for question in QUESTIONS:
                    params = parse(SearchIn, {"query": question, "mode": mode, "kinds": kinds, "limit": 8})
                    expected = memory_search.search("alice", params)
                    got = database_search.search("alice", params)
                    assert [(h.kind, h.id) for h in got.hits] == [(h.kind, h.id) for h in expected.hits], (
                        question,
                        mode,
                        kinds,
                    )
                    for a, b in zip(got.hits, expected.hits, strict=True):
                        assert a.score == pytest.approx(b.score, abs=2e-3)
                        assert set(a.signals) == set(b.signals)
                        seen.update(a.signals)
                    compared += 1
            params = parse(SearchIn, {"query": "", "conversation": dialogue, "kinds": kinds, "limit": 8})
            assert [(h.kind, h.id) for h in database_search.search("alice", params).hits] == [
                (h.kind, h.id) for h in memory_search.search("alice", params).hits
            ]
        assert compared == 2 * 3 * len(QUESTIONS)
        assert seen == {"kw", "kw_ctx", "dense", "ctx", "speaker", "time", "join", "neighbour"}
    finally:
        lite.close()


# What one search of the small store above may cost, once the agent's scripts are known: each statement is a
# round trip, and each connection taken from the pool three more (its ping, BEGIN and COMMIT).
STATEMENTS_PER_SEARCH = 14
# The searching thread's reads share one connection; a hybrid search's dense half, on a thread of its own, one more.
CONNECTIONS_PER_SEARCH = {"keyword": 1, "hybrid": 2}


def test_a_search_of_a_small_store_asks_few_statements_on_few_connections(pg: Database) -> None:
    _load(pg)
    searcher = pg_source.searcher(pg, WordsEmbedder())
    statements, connections = [0], [0]

    def counted(*_: object) -> None:
        statements[0] += 1

    def taken(*_: object) -> None:
        connections[0] += 1

    asked = [
        parse(SearchIn, {"query": question, "mode": mode, "kinds": kinds, "limit": 8})
        for question in QUESTIONS
        for mode in ("keyword", "hybrid")
        for kinds in ("all", "context")
    ]
    for params in asked:
        searcher.search("alice", params)
    event.listen(pg.engine, "before_cursor_execute", counted)
    event.listen(pg.engine.pool, "checkout", taken)
    try:
        for params in asked:
            statements[0] = connections[0] = 0
            assert searcher.search("alice", params).hits
            assert statements[0] <= STATEMENTS_PER_SEARCH, (params.query, params.mode, params.kinds)
            assert connections[0] <= CONNECTIONS_PER_SEARCH[params.mode], (params.query, params.mode, params.kinds)
    finally:
        event.remove(pg.engine, "before_cursor_execute", counted)
        event.remove(pg.engine.pool, "checkout", taken)


def test_a_store_with_large_and_small_views_looks_the_small_ones_up_together_and_each_large_one_beside_them(
    pg: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    _load(pg)  # four memories, eleven turns
    searcher = pg_source.searcher(pg, WordsEmbedder())
    asked = [
        parse(SearchIn, {"query": question, "mode": mode, "limit": 8})
        for question in QUESTIONS
        for mode in ("keyword", "hybrid")
    ]
    alone = [ask(searcher, "alice", **params.model_dump(exclude_defaults=True)) for params in asked]
    monkeypatch.setattr(pg_source, "SMALL_VIEW", 8)  # now the turns' views are large, the memories' small
    taken = [0]

    def counted(*_: object) -> None:
        taken[0] += 1

    event.listen(pg.engine.pool, "checkout", counted)
    try:
        for params, expected in zip(asked, alone, strict=True):
            taken[0] = 0
            assert ask(searcher, "alice", **params.model_dump(exclude_defaults=True)) == expected, params.query
            # The searching thread's connection (with the memories' keyword view), one for each of the turns' two
            # keyword views; in hybrid, the dense half's (with the memories' walk) and one for each of the turns'.
            assert taken[0] == {"keyword": 3, "hybrid": 6}[params.mode], (params.query, params.mode)
    finally:
        event.remove(pg.engine.pool, "checkout", counted)


def test_lookups_side_by_side_answer_in_the_order_asked_and_at_once() -> None:
    barrier = threading.Barrier(3, timeout=10)

    def lookup(name: str) -> str:
        barrier.wait()  # returns only when all three run at the same time
        return name.upper()

    assert side_by_side(lookup, ["kw", "kw_ctx", "dense"]) == ["KW", "KW_CTX", "DENSE"]
    assert side_by_side(lookup, []) == []


def _three_lookups() -> list[str]:
    return side_by_side(str.upper, ["kw", "kw_ctx", "dense"])


# A prefork worker forks a process that may have searched: the child is multi-threaded Python's warning case.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_looks_up_side_by_side_on_threads_of_its_own() -> None:
    barrier = threading.Barrier(3, timeout=10)

    def together(name: str) -> str:
        barrier.wait()
        return name

    assert side_by_side(together, ["kw", "kw_ctx", "dense"]) == ["kw", "kw_ctx", "dense"]  # two lookup threads
    time.sleep(0.5)  # both idle now: a lookup is handed to an idle thread rather than to a new one
    with multiprocessing.get_context("fork").Pool(1) as children:
        # The parent's threads are not in the child: lookups handed to them would wait for ever.
        assert children.apply_async(_three_lookups).get(timeout=30) == ["KW", "KW_CTX", "DENSE"]


def test_a_lookup_that_fails_side_by_side_fails_the_search() -> None:
    def lookup(view: str) -> str:
        if view == "broken":
            raise ConnectionError("server closed the connection")
        return view

    with pytest.raises(ConnectionError, match="server closed"):
        side_by_side(lookup, ["kw", "broken", "dense"])


def url_of(db: Database) -> str:
    return db.engine.url.render_as_string(hide_password=False)


def unindexed(db: Database) -> int:
    with db.read() as conn:
        return int(conn.execute(text("SELECT count(*) FROM narratives WHERE fts_kw IS NULL")).scalar_one())


def test_a_search_indexes_a_bounded_share_of_rows_stored_unindexed_and_the_embed_task_indexes_the_rest(
    pg: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as earlier, pg.write() as conn:  # as a release that left the index to a catch-up
        earlier.setattr(pg_terms, "index_new", lambda *_: None)
        for i in range(10):
            insert_narrative(conn, "alice", memory(f"garden note {i} about tomatoes"))
    monkeypatch.setattr(pg_source, "CATCH_UP_ROWS", 4)
    service = compose(
        Settings(home=tmp_path, database_url=url_of(pg)), jobs=NullJobQueue(), embedder=WordsEmbedder(), database=pg
    )
    found = service.search("alice", parse(SearchIn, {"query": "tomatoes", "mode": "keyword", "limit": 10}))
    assert len(found.hits) == 4 and unindexed(pg) == 6, "the search indexed four rows before it answered"
    service.embed_pending("alice", batch_size=8, max_batches=10)
    assert unindexed(pg) == 0
    found = service.search("alice", parse(SearchIn, {"query": "tomatoes", "mode": "keyword", "limit": 10}))
    assert len(found.hits) == 10


def test_a_keyword_view_hands_over_no_more_candidates_than_the_searchers_keyword_depth(pg: Database) -> None:
    write_memories(pg, "alice", [f"{'garden ' * (i + 1)}plot {i}" for i in range(6)])
    searcher = pg_source.searcher(pg, WordsEmbedder())
    every = ask(searcher, "alice", "garden", mode="keyword", limit=10)
    assert len(every) == 6
    searcher.keyword_depth = 3
    assert ask(searcher, "alice", "garden", mode="keyword", limit=10) == every[:3]
