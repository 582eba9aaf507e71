"""The cold searcher (a hook without a server) on a real store: words in both languages, its bounds, its ranking.

Runs on the suite's store: a SQLite file (FTS5), or PostgreSQL with TIDELINE_TEST_BACKEND=postgres
(where the cold service ranks over `pg_source` without a model). The last tests are FTS5's own and run
on SQLite only.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from tideline_core.compose import compose
from tideline_core.domain.inputs import AmendmentIn, ContextTurnIn, ConversationLine, NarrativeIn, SearchIn
from tideline_core.search.cold import ColdSearch
from tideline_core.search.hybrid import HybridSearch
from tideline_core.search.pg_source import PostgresSource
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings
from tideline_core.store import fts
from tideline_core.store.database import Database
from tideline_core.store.schema import Narrative

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
UNRELATED = ("Bob baked bread on Sunday morning", "小明去公园散步，觉得很安静", "The release notes went out late")


@pytest.fixture
def service(settings: Settings, database: Database) -> Service:
    return compose(settings, jobs=NullJobQueue(), database=database, cold=True)


def remember(service: Service, gesture: str, *, agent: str = "alice", **fields: Any) -> int:
    return service.write_narrative(agent, NarrativeIn(gesture=gesture, **fields)).id


def record(service: Service, session: str, *texts: str, agent: str = "alice") -> list[int]:
    turns = [
        ContextTurnIn(
            role="user", speaker="Bob", content=text, session_id=session, created_at=START + timedelta(minutes=i)
        )
        for i, text in enumerate(texts)
    ]
    return list(service.record_turns(agent, turns).ids)


def found(service: Service, query: str = "", *, agent: str = "alice", **params: Any) -> list[tuple[str, int]]:
    outcome = service.searcher.search(agent, SearchIn(query=query, mode="keyword", **params))
    return [(hit.kind, hit.id) for hit in outcome.hits]


def test_the_cold_service_searches_its_store_by_keyword_and_loads_no_model(service: Service) -> None:
    if service.db.dialect == "postgresql":
        assert isinstance(service.searcher, HybridSearch) and isinstance(service.searcher.source, PostgresSource)
    else:
        assert isinstance(service.searcher, ColdSearch)
    assert not service.embeds


def test_a_chinese_and_an_english_memory_are_found_by_their_words(service: Service) -> None:
    for text in UNRELATED:
        remember(service, text)
    ferry = remember(service, "The ferry timetable changes every Monday in winter")
    migration = remember(service, "我们把数据库迁移到了新的服务器，周五完成")

    assert found(service, "when does the ferry timetable change?")[0] == ("narrative", ferry)
    assert found(service, "数据库迁移什么时候完成")[0] == ("narrative", migration)
    assert ("narrative", ferry) not in found(service, "数据库迁移什么时候完成")


def test_another_agents_memories_are_never_found(service: Service, database: Database) -> None:
    theirs = remember(service, "The ferry timetable changes every Monday in winter", agent="bob")
    remember(service, UNRELATED[0])

    assert found(service, "ferry timetable") == []
    assert found(service, "ferry timetable", agent="bob") == [("narrative", theirs)]
    with database.read() as conn:  # not even a candidate, where it would take a place of alice's
        assert fts.ranked(conn, "narrative", "alice", ["ferry", "timetable"], 10, wanted=10) == []


def test_kinds_narrow_the_search_to_memories_or_to_turns(service: Service) -> None:
    memory = remember(service, "The ferry timetable changes every Monday in winter")
    [turn] = record(service, "s1", "Is the ferry timetable online yet?")

    assert set(found(service, "ferry timetable")) == {("narrative", memory), ("context", turn)}
    assert found(service, "ferry timetable", kinds="narratives") == [("narrative", memory)]
    assert found(service, "ferry timetable", kinds="context") == [("context", turn)]


def test_since_and_until_keep_only_what_happened_between_them(service: Service) -> None:
    march = [remember(service, f"Ferry trip number {i}", occurred_at=START + timedelta(days=9 * i)) for i in range(3)]

    between = found(service, "ferry trip", since=START + timedelta(days=5), until=START + timedelta(days=12))
    assert between == [("narrative", march[1])]
    assert found(service, "ferry trip", since=START + timedelta(days=15)) == [("narrative", march[2])]
    assert found(service, "ferry trip", until=START + timedelta(days=1)) == [("narrative", march[0])]


def test_excluded_rows_leave_their_place_to_the_next_ones(service: Service) -> None:
    best = remember(service, "The ferry timetable changes every Monday in winter, the ferry timetable says")
    next_best = remember(service, "A ferry left late")

    assert found(service, "ferry timetable", limit=1) == [("narrative", best)]
    outcome = service.searcher.search(
        "alice", SearchIn(query="ferry timetable", limit=1, mode="keyword"), exclude={("narrative", best)}
    )
    assert [(h.kind, h.id) for h in outcome.hits] == [("narrative", next_best)]


def test_a_reply_is_found_through_the_question_before_it(service: Service) -> None:
    question, reply = record(service, "s1", "When does the ferry timetable change?", "Every Monday, in winter.")
    record(service, "s2", *UNRELATED)

    outcome = service.searcher.search("alice", SearchIn(query="ferry timetable", kinds="context", mode="keyword"))
    hits = {hit.id: hit for hit in outcome.hits}
    assert list(hits)[:2] == [question, reply]
    assert "kw" not in hits[reply].signals and hits[reply].signals["kw_ctx"] > 0


def test_a_day_the_query_names_lifts_what_happened_then(service: Service) -> None:
    remember(service, "The ferry timetable changed", occurred_at=datetime(2026, 3, 2, tzinfo=UTC))
    june = remember(service, "The ferry timetable changed", occurred_at=datetime(2026, 6, 15, tzinfo=UTC))

    outcome = service.searcher.search("alice", SearchIn(query="ferry timetable on 2026-06-15", mode="keyword"))
    assert (outcome.hits[0].kind, outcome.hits[0].id) == ("narrative", june)
    assert outcome.hits[0].signals["time"] > 0 and outcome.dates == ("2026-06-15",)


def test_a_hybrid_request_is_answered_by_keyword_and_says_so(service: Service) -> None:
    memory = remember(service, "The ferry timetable changes every Monday in winter")

    hybrid = service.searcher.search("alice", SearchIn(query="ferry timetable"))
    keyword = service.searcher.search("alice", SearchIn(query="ferry timetable", mode="keyword"))
    assert [h.id for h in hybrid.hits] == [h.id for h in keyword.hits] == [memory]
    assert (hybrid.mode, keyword.mode) == ("keyword", "keyword")
    assert hybrid.degraded is not None and "keyword-only" in hybrid.degraded and keyword.degraded is None


def test_a_dialogue_is_searched_by_its_most_salient_words(service: Service) -> None:
    for text in UNRELATED:
        remember(service, text)
    lighthouse = remember(service, "Bob 在海边的灯塔拍了日落的照片")
    lines = [
        ConversationLine(speaker="Bob", text="我昨天又去海边了，灯塔那边的日落特别好看"),
        ConversationLine(speaker="me", text="真不错！", is_self=True),
    ]

    outcome = service.searcher.search("alice", SearchIn(conversation=lines, mode="keyword"))
    assert (outcome.hits[0].kind, outcome.hits[0].id) == ("narrative", lighthouse)


def test_a_superseded_memory_is_not_returned(service: Service, database: Database) -> None:
    old = remember(service, "The ferry timetable changes every Monday")
    new = remember(service, "The ferry timetable now changes every Tuesday")
    with database.write() as conn:
        conn.execute(update(Narrative).where(Narrative.id == old).values(superseded_by=new))
    assert found(service, "ferry timetable") == [("narrative", new)]


def test_words_in_no_row_fall_back_to_a_run_of_an_identifiers_parts(service: Service, database: Database) -> None:
    identifier = remember(service, "Renamed HybridSearchIndex in the search module")

    with database.read() as conn:
        assert [i for i, _ in fts.ranked(conn, "narrative", "alice", ["searchindex"], 10, wanted=10)] == [identifier]


# --- FTS5's own lookup (SQLite) -----------------------------------------------------------------


@pytest.fixture
def sqlite_only(database: Database) -> Database:
    if database.dialect != "sqlite":
        pytest.skip("FTS5 is SQLite's; a cold service on PostgreSQL searches its tsvectors")
    return database


def test_leaving_the_common_words_out_of_the_match_keeps_fts5s_order(service: Service, sqlite_only: Database) -> None:
    # "ferry" is in every row: FTS5 gives it no weight, so matching the other words alone orders the same.
    for text in ("ferry winter Monday", "ferry winter", "ferry Monday timetable", "ferry", "ferry dock", "ferry ferry"):
        remember(service, text)
    terms = ["ferry", "winter", "monday"]

    with sqlite_only.read() as conn:
        everything = fts.search(conn, "narrative", "alice", terms, 100)
        cheap = fts.ranked(conn, "narrative", "alice", terms, 100, wanted=1)
    assert [i for i, _ in cheap] == [i for i, _ in everything][: len(cheap)]
    assert len(cheap) == 3  # the rows with "winter" or "monday"


def test_too_few_rows_by_the_rarer_words_brings_in_the_common_ones(service: Service, sqlite_only: Database) -> None:
    rows = [remember(service, text) for text in ("ferry winter", "ferry", "ferry dock", "ferry pier")]

    with sqlite_only.read() as conn:
        hits = fts.ranked(conn, "narrative", "alice", ["ferry", "winter"], 100, wanted=3)
    assert hits[0][0] == rows[0] and {i for i, _ in hits} == set(rows)


def test_a_hook_without_a_server_finds_a_memory_by_its_amendment_and_shows_the_correction(service: Service) -> None:
    for text in UNRELATED:
        remember(service, text)
    swim = remember(service, "周四晚上去游泳，教练叫小林")
    service.amend("alice", AmendmentIn(narrative_id=swim, note="教练小林下个月换到周五晚上"))
    outcome = service.searcher.search("alice", SearchIn(query="周五", mode="keyword", kinds="narratives"))
    single = found(service, "换", kinds="narratives")  # one character: the substring lookup, amendments included
    assert [h.id for h in outcome.hits] == [swim]
    assert outcome.hits[0].text.startswith("周四晚上去游泳，教练叫小林 — amended ")
    assert outcome.hits[0].text.endswith(": 教练小林下个月换到周五晚上")
    assert single == [("narrative", swim)]
