"""PostgreSQL's keyword index: the statistics a query reads, which rows a large view scores, the odds it plans with."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pgvector_server import pgvector_url  # noqa: F401 - the fixture
from tideline_core.domain.inputs import AmendmentIn, ContextTurnIn, NarrativeIn, parse
from tideline_core.search import pg_keywords
from tideline_core.search.pg_keywords import at_least, candidate_query
from tideline_core.store import pg_terms
from tideline_core.store.database import Database
from tideline_core.store.narratives import amend, insert_narrative
from tideline_core.store.turns import insert_turns


@pytest.fixture
def pg(pgvector_url: str) -> Iterator[Database]:  # noqa: F811 - the fixture imported above
    db = Database.open(pgvector_url)
    yield db
    db.close()


def test_at_least_counts_the_ways_m_independent_events_happen() -> None:
    assert at_least(0, [0.3, 0.6]) == pytest.approx(1.0)
    assert at_least(1, [0.5, 0.5]) == pytest.approx(0.75)
    assert at_least(2, [0.5, 0.5]) == pytest.approx(0.25)
    assert at_least(2, [0.1, 0.2, 0.3]) == pytest.approx(0.1 * 0.2 + 0.1 * 0.3 + 0.2 * 0.3 - 2 * 0.1 * 0.2 * 0.3)
    assert at_least(4, [0.5, 0.5, 0.5]) == 0.0


def test_rare_terms_within_the_budget_are_looked_up_whole_and_uncapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_keywords, "POSTINGS_BUDGET", 100)
    query, capped = candidate_query(["rare", "less", "common"], {"rare": 10, "less": 60, "common": 5000}, 100_000)
    assert (query, capped) == ("'rare' | 'less'", False)


def test_past_the_budget_rows_holding_several_of_the_rarest_terms_are_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pg_keywords, "POSTINGS_BUDGET", 100)
    monkeypatch.setattr(pg_keywords, "SEVERAL_BUDGET", 100)
    df = {"a": 1000, "b": 2000, "c": 3000, "d": 4000, "e": 50_000}
    query, capped = candidate_query(["a", "b", "c", "d", "e"], df, 100_000)
    # Two of four would match ~1,400 rows (independence), three of four ~60: three it is, over the four rarest.
    assert query == "('a' & 'b' & 'c') | ('a' & 'b' & 'd') | ('a' & 'c' & 'd') | ('b' & 'c' & 'd')"
    assert capped


def test_an_old_row_holding_every_word_of_a_question_is_found_in_a_large_view(
    pg: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = ["alpha", "bravo", "charlie", "delta"]
    with pg.write() as conn:
        full = insert_narrative(conn, "alice", parse(NarrativeIn, {"gesture": " ".join(words)})).id
        for i in range(30):
            for word in words:  # newer rows, each holding one of the words: every word is common
                insert_narrative(conn, "alice", parse(NarrativeIn, {"gesture": f"{word} filler{i}x"}))
    monkeypatch.setattr(pg_keywords, "EXACT_ROWS", 10)
    monkeypatch.setattr(pg_keywords, "POSTINGS_BUDGET", 5)
    monkeypatch.setattr(pg_keywords, "SEVERAL_BUDGET", 5)
    with pg.read() as conn:
        found = pg_keywords.search_view(conn, "alice", "narrative", "kw", dict.fromkeys(words, 1.0), 3)
        exact = pg_keywords.search_view(conn, "alice", "narrative", "kw", dict.fromkeys(words, 1.0), 3, exact=True)
    assert found[0][0] == exact[0][0] == full


def test_one_read_gives_every_views_row_count_token_total_and_the_terms_rows(pg: Database) -> None:
    with pg.write() as conn:
        insert_narrative(conn, "alice", parse(NarrativeIn, {"gesture": "alpha bravo"}))
        insert_narrative(conn, "alice", parse(NarrativeIn, {"gesture": "alpha charlie delta"}))
        insert_narrative(conn, "bob", parse(NarrativeIn, {"gesture": "alpha alpha alpha"}))
        insert_turns(conn, "alice", [parse(ContextTurnIn, {"role": "user", "content": "bravo"})])
    views = [("narrative", "kw"), ("context", "kw"), ("context", "kw_ctx"), ("narrative", "kw_ctx")]
    with pg.read() as conn:
        stats = pg_keywords.view_stats(conn, "alice", views, ["alpha", "bravo", "zulu"])
    narratives = stats[("narrative", "kw")]
    assert (narratives.rows, narratives.tokens) == (2, 5)
    assert narratives.df == {"": 2, "alpha": 2, "bravo": 1}  # bob's rows and absent terms count for nothing
    assert stats[("context", "kw")].df["bravo"] == 1
    assert ("narrative", "kw_ctx") not in stats  # narratives have no window view
    with pg.read() as conn:
        read_alone = pg_keywords.search_view(conn, "alice", "narrative", "kw", {"alpha": 1.0, "bravo": 1.0}, 5)
        given = pg_keywords.search_view(
            conn, "alice", "narrative", "kw", {"alpha": 1.0, "bravo": 1.0}, 5, stats=narratives
        )
    assert read_alone == given and len(given) == 2


def test_an_amended_memory_is_indexed_again_with_its_note_and_counted_once(pg: Database) -> None:
    with pg.write() as conn:
        first = insert_narrative(conn, "alice", parse(NarrativeIn, {"gesture": "alpha bravo"}))
        insert_narrative(conn, "alice", parse(NarrativeIn, {"gesture": "alpha charlie"}))
    with pg.write() as conn:
        amend(conn, "alice", AmendmentIn(narrative_id=first.id, note="zulu zulu"))
    with pg.read() as conn:
        waiting = pg_terms.has_unindexed(conn, "alice")
        stats = pg_keywords.view_stats(conn, "alice", [("narrative", "kw")], ["alpha", "bravo", "zulu"])
        found = pg_keywords.search_view(conn, "alice", "narrative", "kw", {"zulu": 1.0}, 5)
    assert not waiting, "the amendment indexed the memory again in its own write"
    narratives = stats[("narrative", "kw")]
    assert (narratives.rows, narratives.tokens) == (2, 6)
    assert narratives.df == {"": 2, "alpha": 2, "bravo": 1, "zulu": 1}
    assert [i for i, _ in found] == [first.id]
