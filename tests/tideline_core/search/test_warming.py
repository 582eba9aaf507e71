"""Warming: while an agent's in-memory indexes are built, its searches are answered from the store, then as always.

On a SQLite file (warming is SQLite's: PostgreSQL keeps no index in the process). The build is held
at its start by an event, so what a search answers while it runs is never a race; a bag-of-words
embedder stands in for e5.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests import words_embedder
from tideline_core.compose import compose
from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn, SearchIn, parse
from tideline_core.ingest import embed_pending
from tideline_core.search import memory_source, warming
from tideline_core.search.cold import ColdSearch
from tideline_core.search.hybrid import HybridSearch
from tideline_core.search.memory_source import MemorySource
from tideline_core.search.reference import REFERENCES
from tideline_core.search.sources import StoreRows
from tideline_core.search.warming import WarmingSearch
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.turns import insert_turns

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
MEMORIES = (
    "The ferry timetable changes every Monday in winter",
    "我们把数据库迁移到了新的服务器，周五完成",
    "Bob baked bread on Sunday morning",
    "The release notes went out late",
    "小明去公园散步，觉得很安静",
)
QUESTIONS = ("when does the ferry timetable change?", "数据库迁移", "what did Bob bake?", "release notes")


class WordsEmbedder(words_embedder.WordsEmbedder):
    """Hashed bag of words (the in-memory index's size), counting the texts it embeds as passages."""

    dim = 256

    def __init__(self) -> None:
        self.passages_seen: list[str] = []

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages_seen.extend(texts)
        return super().passages(texts)

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        return np.stack([self._one(t) for t in texts])


class HeldSource(MemorySource):
    """The in-memory indexes, whose build waits for `release` (after setting `reached`) and fails `failures` times."""

    def __init__(self, db: Database, model: str) -> None:
        super().__init__(db, model)
        self.reached = threading.Event()
        self.release = threading.Event()
        self.failures = 0

    def build(self, agent_id: str) -> None:
        self.reached.set()
        self.release.wait()
        if self.failures:
            self.failures -= 1
            raise OSError("the disk went away")
        super().build(agent_id)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database.open(f"sqlite:///{tmp_path / 'memory.db'}")
    yield database
    database.close()


@pytest.fixture
def embedder() -> WordsEmbedder:
    return WordsEmbedder()


@pytest.fixture
def source(db: Database, embedder: WordsEmbedder) -> Iterator[HeldSource]:
    held = HeldSource(db, embedder.model)
    yield held
    held.release.set()  # a build a test left held ends before the store closes


@pytest.fixture
def searcher(db: Database, embedder: WordsEmbedder, source: HeldSource) -> WarmingSearch:
    """Warming for every agent, however small (the stores here are)."""
    remember(db, embedder, *MEMORIES)
    warm = HybridSearch(embedder, source, StoreRows(db))
    return WarmingSearch(warm, source, ColdSearch(db), foreground_rows=0)


def remember(db: Database, embedder: WordsEmbedder, *gestures: str) -> list[int]:
    with db.write() as conn:
        ids = [insert_narrative(conn, "alice", NarrativeIn(gesture=g)).id for g in gestures]
        turns = [
            ContextTurnIn(
                role="user", speaker="Ann", content=g, session_id="s1", created_at=START + timedelta(minutes=i)
            )
            for i, g in enumerate(gestures)
        ]
        insert_turns(conn, "alice", turns)
    embed_pending(db, embedder)  # type: ignore[arg-type]
    return ids


def ask(searcher: Any, query: str, **params: Any) -> Any:
    return searcher.search("alice", parse(SearchIn, {"query": query, **params}))


def ranked(outcome: Any) -> list[tuple[str, int, float]]:
    return [(hit.kind, hit.id, round(hit.score, 9)) for hit in outcome.hits]


def test_while_the_indexes_are_built_a_search_answers_from_the_store_and_says_so(
    searcher: WarmingSearch, source: HeldSource
) -> None:
    searcher.warm_up("alice")
    assert source.reached.wait(10)

    outcome = ask(searcher, "when does the ferry timetable change?")

    assert outcome.hits[0].text == MEMORIES[0]
    assert outcome.mode == "keyword"
    assert outcome.degraded is not None and "being built" in outcome.degraded and "keyword-only" in outcome.degraded


def test_the_first_search_of_an_agent_starts_the_build_and_does_not_wait_for_it(
    searcher: WarmingSearch, source: HeldSource
) -> None:
    outcome = ask(searcher, "数据库迁移")

    assert source.reached.wait(10)  # the build runs, still held, while the answer is already here
    assert outcome.hits[0].text == MEMORIES[1] and outcome.degraded is not None


def test_once_warm_every_search_ranks_exactly_as_the_in_memory_search(
    db: Database, embedder: WordsEmbedder, searcher: WarmingSearch, source: HeldSource
) -> None:
    build = searcher.warm_up("alice")
    source.release.set()
    assert build.wait(10) and build.error is None
    plain = memory_source.searcher(db, embedder)  # type: ignore[arg-type]

    for question in QUESTIONS:
        for mode in ("hybrid", "keyword", "dense"):
            warm = ask(searcher, question, mode=mode)
            assert warm.degraded is None
            assert ranked(warm) == ranked(ask(plain, question, mode=mode)), (question, mode)


def test_a_memory_written_while_the_indexes_are_built_is_found_then_and_once_warm(
    db: Database, embedder: WordsEmbedder, searcher: WarmingSearch, source: HeldSource
) -> None:
    build = searcher.warm_up("alice")
    assert source.reached.wait(10)
    (written,) = remember(db, embedder, "The lighthouse keeper retired in March")

    assert ("narrative", written) in [(h.kind, h.id) for h in ask(searcher, "lighthouse keeper").hits]
    source.release.set()
    assert build.wait(10)
    assert ask(searcher, "lighthouse keeper").hits[0].id == written


def test_a_failed_build_is_reported_and_the_next_search_builds_again(
    searcher: WarmingSearch, source: HeldSource
) -> None:
    source.failures = 1
    failed = searcher.warm_up("alice")
    source.release.set()
    assert failed.wait(10) and failed.error is not None and "the disk went away" in failed.error

    outcome = ask(searcher, "release notes")
    assert outcome.hits[0].text == MEMORIES[3]
    assert outcome.degraded is not None and "failed to build (OSError: the disk went away)" in outcome.degraded
    again = searcher.warm_up("alice")  # the one that search started
    assert again is not failed and again.wait(10) and again.error is None
    assert ask(searcher, "release notes").degraded is None


def test_the_build_embeds_the_reference_sentences_so_the_first_warm_search_embeds_only_its_question(
    embedder: WordsEmbedder, searcher: WarmingSearch, source: HeldSource
) -> None:
    build = searcher.warm_up("alice")
    source.release.set()
    assert build.wait(10)
    assert set(REFERENCES["latin"]) <= set(embedder.passages_seen)
    embedded = len(embedder.passages_seen)

    assert ask(searcher, "ferry timetable").degraded is None
    assert len(embedder.passages_seen) == embedded


def test_a_small_agent_is_not_warmed_its_first_search_builds_its_indexes_as_before(
    db: Database, embedder: WordsEmbedder
) -> None:
    remember(db, embedder, *MEMORIES)
    small = warming.searcher(db, embedder)  # type: ignore[arg-type]

    build = small.warm_up("alice")
    outcome = ask(small, "ferry timetable")

    assert build.done and build.error is None
    assert outcome.degraded is None and outcome.hits[0].text == MEMORIES[0]


def test_a_service_composed_for_warming_warms_an_agent_on_request(make_settings: Any, tmp_path: Path) -> None:
    settings: Settings = make_settings(database_url=f"sqlite:///{tmp_path / 'warming.db'}", embedder="none")
    service = compose(settings, jobs=NullJobQueue(), warming=True)
    try:
        assert isinstance(service.searcher, WarmingSearch)
        build = service.warm_up("alice")
        assert build is not None and build.wait(10) and build.error is None
    finally:
        service.close()
    plain = compose(settings, jobs=NullJobQueue())
    try:
        assert plain.warm_up("alice") is None  # nothing to warm: the first search builds, as before
    finally:
        plain.close()


def test_a_warm_up_that_cannot_read_the_store_raises_nothing_and_leaves_the_build_to_the_first_search(
    make_settings: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    settings: Settings = make_settings(database_url=f"sqlite:///{home / 'warming.db'}", embedder="none")
    service = compose(settings, jobs=NullJobQueue(), warming=True)
    service.close()  # as a server stopping while its warm-up thread starts: the store is gone under it
    shutil.rmtree(home)

    build = service.warm_up("alice")

    assert build is not None and build.done
    assert build.error is not None and "unable to open database file" in build.error
