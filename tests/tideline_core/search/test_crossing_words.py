"""A keyword question in one language finds a memory written in the other, where the store holds both.

The service's searcher of this run's backend: in memory on SQLite, the database's own on PostgreSQL (the hook's
FTS5 searcher without a server does not cross).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn, SearchIn
from tideline_core.embedding import NoEmbedder
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings


@pytest.fixture
def service(tmp_path: Path, store_url: str) -> Iterator[Service]:
    settings = Settings(home=tmp_path, embedder="none", database_url=store_url)
    built = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder())
    yield built
    built.close()


def remember(service: Service, gesture: str) -> int:
    return service.write_narrative("alice", NarrativeIn(gesture=gesture)).id


def found(service: Service, query: str) -> list[int]:
    return [hit.id for hit in service.searcher.search("alice", SearchIn(query=query, mode="keyword")).hits]


def test_a_chinese_question_finds_the_english_memory_by_its_words_in_english(service: Service) -> None:
    printer = remember(service, "The printer on the third floor jams every morning")
    remember(service, "We repainted the garden fence green")
    remember(service, "周四晚上去游泳，教练叫小林")

    assert found(service, "哪台打印机总是卡纸？")[:1] == [printer]


def test_an_english_question_finds_the_chinese_memory_by_its_words_in_chinese(service: Service) -> None:
    dentist = remember(service, "我下周三要去看牙医")
    remember(service, "妈妈的生日是十月五号")
    remember(service, "The train to Leeds leaves at 7:40")

    assert found(service, "when do I see the dentist?")[:1] == [dentist]


def test_a_store_in_one_language_is_searched_by_the_question_words_alone(service: Service) -> None:
    remember(service, "The printer on the third floor jams every morning")
    remember(service, "We repainted the garden fence green")

    assert found(service, "打印机") == []


def test_a_store_that_becomes_bilingual_is_crossed_from_the_next_search(service: Service) -> None:
    remember(service, "The printer on the third floor jams every morning")
    assert found(service, "打印机") == []

    swim = remember(service, "周四晚上去游泳，教练叫小林")

    assert found(service, "swim")[:1] == [swim]


def test_a_question_word_the_dictionary_does_not_cross_finds_nothing_in_the_other_language(service: Service) -> None:
    remember(service, "The printer on the third floor jams every morning")
    remember(service, "周四晚上去游泳，教练叫小林")

    assert found(service, "zxqv 篱笆") == []
