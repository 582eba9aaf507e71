"""Keyword search matches whole words and their stems, never the words a query word begins unless asked, on every
searcher.

Runs on the suite's store (SQLite, or PostgreSQL with TIDELINE_TEST_BACKEND=postgres), through the
service's own searcher (the in-memory index, or PostgreSQL's tsvectors) and the cold one a hook uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tideline_core.compose import compose
from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn, SearchIn
from tideline_core.embedding import NoEmbedder
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings

START = datetime(2026, 3, 7, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["hot", "cold"])
def service(request: pytest.FixtureRequest, tmp_path: Path, store_url: str) -> Iterator[Service]:
    settings = Settings(home=tmp_path, embedder="none", database_url=store_url)
    built = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder(), cold=request.param == "cold")
    yield built
    built.close()


def remember(service: Service, gesture: str) -> int:
    return service.write_narrative("alice", NarrativeIn(gesture=gesture)).id


def record(service: Service, *texts: str) -> list[int]:
    turns = [
        ContextTurnIn(
            role="user", speaker="Bob", content=text, session_id="s1", created_at=START + timedelta(minutes=i)
        )
        for i, text in enumerate(texts)
    ]
    return list(service.record_turns("alice", turns).ids)


def found(service: Service, query: str) -> list[int]:
    return [hit.id for hit in service.searcher.search("alice", SearchIn(query=query, mode="keyword")).hits]


def test_a_short_word_does_not_find_the_longer_words_it_begins(service: Service) -> None:
    remember(service, "Bought new swimming goggles")
    remember(service, "Thursday is the team sync")
    remember(service, "Remember to water the plants")

    assert found(service, "go") == []
    assert found(service, "Thu") == []
    assert found(service, "rem") == []


def test_a_word_finds_the_rows_holding_it_whole(service: Service) -> None:
    remember(service, "Bought new swimming goggles")
    going = remember(service, "We go to the lake every summer")

    assert found(service, "go") == [going]


def test_a_word_finds_the_other_forms_of_its_stem(service: Service) -> None:
    jog = remember(service, "I jog along the river")
    jogged = remember(service, "Bob jogged five kilometres yesterday")
    remember(service, "Bought new swimming goggles")

    assert sorted(found(service, "jogging")) == sorted([jog, jogged])


def test_asking_when_one_goes_jogging_does_not_find_the_goggles(service: Service) -> None:
    goggles = {("context", turn) for turn in record(service, "I lost my goggles at the pool", "The new goggles fog up")}
    remember(service, "每周六早上在公园跑步五公里")

    hits = service.searcher.search("alice", SearchIn(query="when do I go jogging?", mode="keyword")).hits
    assert not {(hit.kind, hit.id) for hit in hits} & goggles


def test_an_identifier_is_found_by_a_run_of_its_parts(service: Service) -> None:
    identifier = remember(service, "Renamed HybridSearchIndex in the search module")
    remember(service, "Bought new swimming goggles")

    assert found(service, "searchindex") == [identifier]
    assert found(service, "HybridSearch") == [identifier]
    assert found(service, "archind") == []


def test_a_chinese_word_is_found_inside_the_text_as_segmented(service: Service) -> None:
    swim = remember(service, "周四晚上去游泳，教练叫小林")
    remember(service, "Bought new swimming goggles")

    assert found(service, "游泳")[:1] == [swim]  # the goggles may follow: 游泳 is "swim" in English
    assert found(service, "林") == [swim]


def test_a_word_written_with_a_star_finds_every_word_it_begins(service: Service) -> None:
    goggles = remember(service, "Bought new swimming goggles")
    going = remember(service, "We go to the lake every summer")
    sync = remember(service, "Thursday is the team sync")
    remember(service, "Remember to water the plants")

    assert sorted(found(service, "go*")) == sorted([goggles, going])
    assert found(service, "thu*") == [sync]
    assert found(service, "goggle*") == [goggles]


def test_a_star_prefix_counts_as_one_word_however_many_it_begins(service: Service) -> None:
    many = remember(service, "swim, swimming, swimmer and the swimmers")
    once = remember(service, "a swim on Sunday")

    hits = found(service, "swim* Sunday")

    assert hits[0] == once  # Sunday and one swim word outweigh four words of one prefix
    assert many in hits


def test_one_latin_letter_with_a_star_is_no_prefix(service: Service) -> None:
    remember(service, "Bought new swimming goggles")

    assert found(service, "g*") == []


def test_a_chinese_prefix_finds_the_words_it_begins(service: Service) -> None:
    swim = remember(service, "周四晚上去游泳，教练叫小林")
    game = remember(service, "周末一起打游戏")
    remember(service, "周五去旅行")

    assert sorted(found(service, "游*")) == sorted([swim, game])
