"""A memory's text is defined once, and every consumer reads the view meant for it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.domain.memory_text import (
    narrative_passage,
    narrative_prose,
    narrative_search_text,
    turn_text,
    turn_window,
)
from tideline_core.dream.recluster.store import read_topics, rebuild_topics
from tideline_core.search.keyword_index import KeywordIndex
from tideline_core.store import fts
from tideline_core.store.database import Database
from tideline_core.store.embeddings import pending_rows
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.turns import insert_turns, turn_windows

MEMORY = NarrativeIn(
    gesture="We argued about the roof",
    context="Rain came through the ceiling",
    moment="The bucket overflowed at midnight",
    cognition_direction="Repairs cannot wait",
    tags=["house", "家"],
    entities_role="Mia=insisted; Ren=hesitated",
)


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    database = Database.open(store_url)
    yield database
    database.close()


def test_each_view_holds_the_fields_meant_for_its_reader() -> None:
    search = narrative_search_text(MEMORY)
    assert all(part in search for part in ("roof", "ceiling", "bucket", "Repairs", "house 家", "Mia=insisted"))
    passage = narrative_passage(MEMORY)
    assert passage.splitlines()[0] == MEMORY.gesture and passage.splitlines()[-1] == "house 家"
    assert "Mia" not in passage
    prose = narrative_prose(MEMORY)
    assert "bucket" in prose and "house" not in prose and "Mia" not in prose


def test_a_turn_reads_as_its_speaker_and_its_window_keeps_two_turns_before_it() -> None:
    assert turn_text("Mia", "hello") == "Mia: hello" and turn_text("", "hello") == "hello"
    earlier = [("Ann", "one"), ("Bob", "two"), ("Ann", "three")]
    assert turn_window(earlier, "Bob", "four") == "Bob: two\nAnn: three\nBob: four"
    assert turn_window([], "Bob", "first") == "Bob: first"


def test_the_keyword_index_the_fts_fallback_and_the_embedder_all_see_the_moment(db: Database) -> None:
    with db.write() as conn:
        memory = insert_narrative(conn, "alice", MEMORY).id
        pending = pending_rows(conn, "narrative", agent_id="alice")
        by_moment = fts.search(conn, "narrative", "alice", ["bucket"], 10)
        by_role = fts.search(conn, "narrative", "alice", ["insisted"], 10)
    assert [p.text for p in pending] == [narrative_passage(MEMORY)]
    assert [i for i, _ in by_moment] == [memory] and [i for i, _ in by_role] == [memory]
    found = KeywordIndex(db).search_views("alice", "narrative", {"bucket": 1.0, "家": 1.0}, 10)
    assert [i for i, _ in found["kw"]] == [memory]


def test_topic_clusters_read_the_moment_too(db: Database) -> None:
    with db.write() as conn:
        for i in range(3):
            insert_narrative(conn, "alice", NarrativeIn(gesture=f"Evening number {i}", moment="The lighthouse blinked"))
        for i in range(12):
            insert_narrative(conn, "alice", NarrativeIn(gesture=f"Filler memory {i} about nothing"))
    rebuild_topics(db, "alice")
    with db.read() as conn:
        keywords = {t.keyword for t in read_topics(conn, "alice")}
    assert "lighthouse" in keywords


def test_the_stored_window_of_a_turn_is_the_view_of_its_session_in_spoken_order(db: Database) -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    lines = [("Ann", "one"), ("Bob", "two"), ("Ann", "three")]
    turns = [
        ContextTurnIn(role="user", speaker=who, content=text, session_id="s", created_at=start + timedelta(minutes=i))
        for i, (who, text) in enumerate(lines)
    ]
    with db.write() as conn:
        ids = insert_turns(conn, "alice", turns[::-1])  # written out of order
        windows = turn_windows(conn, ids)
    by_text = {windows[i].rsplit(": ", 1)[1]: windows[i] for i in ids}
    assert by_text["three"] == "Ann: one\nBob: two\nAnn: three" and by_text["one"] == "Ann: one"
