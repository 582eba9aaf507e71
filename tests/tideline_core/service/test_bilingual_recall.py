"""Small bilingual stores through the service with the real e5 model: a question in one language finds a memory
written in the other among a handful of unrelated ones, and a query of nonsense gets no per-turn recall.

The cases are `tests/fixtures/search/bilingual.json`: stores of 5 to 20 memories, where every row is a
dense candidate (the regime in which min-max fusion stretched the unrelated rows over the whole scale).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import FakeQueue

from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn, PrefetchIn, SearchIn
from tideline_core.embedding.local import LocalE5Embedder
from tideline_core.service import Service
from tideline_core.settings import Settings

FIXTURE = json.loads((Path(__file__).parents[2] / "fixtures" / "search" / "bilingual.json").read_text("utf-8"))
STORES: list[dict[str, Any]] = FIXTURE["stores"]


@pytest.fixture
def e5_service(tmp_path: Path, store_url: str, model_cache: Path) -> Iterator[Service]:
    queue = FakeQueue()
    settings = Settings(home=tmp_path, database_url=store_url, query_embedding_timeout=300.0)
    service = compose(settings, jobs=queue, embedder=LocalE5Embedder(model_cache))
    queue.service = service
    for store in STORES:
        for memory in store["memories"]:
            service.write_narrative(store["name"], NarrativeIn(gesture=memory))
    while service.embed_pending(None, batch_size=32, max_batches=1).embedded:
        pass
    yield service
    service.close()


def test_a_question_in_one_language_finds_the_memory_written_in_the_other_in_the_top_three(e5_service: Service) -> None:
    # The cases marked `dictionary` share no word and too little meaning with their memory for e5: only the
    # keyword search's crossing words (`search.glossary`) find them, in memory and in PostgreSQL alike.
    missed = []
    for store in STORES:
        for case in store["cases"]:
            hits = e5_service.search(store["name"], SearchIn(query=case["query"], limit=3)).hits
            if case["expect"] not in [hit.text for hit in hits]:
                missed.append((store["name"], case["query"], [hit.text for hit in hits]))
    assert missed == []


def test_a_query_of_nonsense_gets_no_per_turn_items_from_any_store(e5_service: Service) -> None:
    shown = {
        (store["name"], query): [
            item.text for item in e5_service.prefetch(store["name"], PrefetchIn(query=query)).items
        ]
        for store in STORES
        for query in FIXTURE["nonsense"]
    }
    assert {key: items for key, items in shown.items() if items} == {}


def test_the_per_turn_block_holds_a_cross_language_memory_for_the_evidence_it_has(e5_service: Service) -> None:
    block = e5_service.prefetch("family", PrefetchIn(query="what is my father allergic to?"))
    assert [item.text.split("] ", 1)[1] for item in block.items] == ["爸爸对花生过敏"]
    assert "dense" in block.items[0].reason


def test_two_memories_rank_the_same_whichever_was_written_first(e5_service: Service) -> None:
    # With two rows min-max gives each view's better row a full score: the swimming memory's keyword match (Thursday
    # crossing to 周四) and the standup's dense lead tie exactly. The row with evidence of its own goes first.
    swimming, standup = "每周四晚上去游泳，教练是小林", "Decided to move the team standup to 10am on Tuesdays"
    for agent, order in (("pair-swim-first", (swimming, standup)), ("pair-standup-first", (standup, swimming))):
        for memory in order:
            e5_service.write_narrative(agent, NarrativeIn(gesture=memory))
    while e5_service.embed_pending(None, batch_size=32, max_batches=1).embedded:
        pass
    for agent in ("pair-swim-first", "pair-standup-first"):
        hits = e5_service.search(agent, SearchIn(query="what do I do on Thursday night?", limit=2)).hits
        assert [hit.text for hit in hits] == [swimming, standup], agent
