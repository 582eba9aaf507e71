"""A compound question ("…？另外，…？") finds the answer to each of its questions, on every searcher.

Asked whole, the part whose words more rows share fills the top with its own rows; asked part by
part and interleaved, each part's best rows are in. Runs on the suite's store through the service's
own searcher and the cold one a hook uses.
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


@pytest.fixture(params=["hot", "cold"])
def service(request: pytest.FixtureRequest, tmp_path: Path, store_url: str) -> Iterator[Service]:
    settings = Settings(home=tmp_path, embedder="none", database_url=store_url)
    built = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder(), cold=request.param == "cold")
    yield built
    built.close()


def remember(service: Service, *gestures: str) -> list[int]:
    return [service.write_narrative("alice", NarrativeIn(gesture=g)).id for g in gestures]


def top(service: Service, query: str, limit: int = 3) -> list[int]:
    outcome = service.searcher.search("alice", SearchIn(query=query, mode="keyword", limit=limit))
    return [hit.id for hit in outcome.hits]


QUESTION = "上司是做什么工作的呢？另外，金融科技精英论坛的地点是什么？"


def forum_and_boss(service: Service) -> tuple[int, int]:
    """A store where the forum's words are in many rows and the boss's answer shares a common word with others."""
    forum, *_ = remember(
        service,
        "金融科技精英论坛的地点是深圳会展中心",
        "金融科技精英论坛的门票是免费的",
        "金融科技精英论坛有三百人参加",
        "金融科技精英论坛的主讲人是王教授",
        "金融科技精英论坛明年还办",
    )
    boss, *_ = remember(
        service,
        "我上司的工作是律师",
        "上司周五请大家吃饭",
        "上司的车是白色的",
        "上司下个月去北京",
        "表妹的工作在广州",
        "同事的工作很忙",
    )
    return forum, boss


def test_each_question_of_a_compound_question_finds_its_answer(service: Service) -> None:
    forum, boss = forum_and_boss(service)

    found = top(service, QUESTION)

    assert boss in found
    assert forum in found


def test_asked_as_one_question_the_part_with_more_shared_words_fills_the_top(tmp_path: Path, store_url: str) -> None:
    settings = Settings(home=tmp_path, embedder="none", database_url=store_url)
    service = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder())
    try:
        _, boss = forum_and_boss(service)

        assert boss not in top(service, QUESTION.replace("？另外，", "，"))
        assert boss in top(service, QUESTION)
    finally:
        service.close()


def test_an_english_compound_question_finds_both_answers(service: Service) -> None:
    remember(
        service,
        "The Lisbon marathon starts at the harbour",
        "The Lisbon marathon has a new route",
        "The Lisbon marathon medal is made of cork",
    )
    (dentist,) = remember(service, "My dentist appointment moved to Wednesday")

    found = top(service, "Where does the Lisbon marathon start? And when is my dentist appointment?")

    assert dentist in found
    assert len(found) == 3
