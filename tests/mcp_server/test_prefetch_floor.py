"""An agent's per-turn recall over MCP holds only memories with evidence: nonsense gets nothing, and a question in
English finds the one memory written in Chinese that bears on it in a small store (the real e5 model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp_helpers import RecordingJobQueue, call

from mcp_server.app import create_server
from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio
MEMORIES = (
    "爸爸对花生过敏",
    "我们家的猫叫豆豆，今年三岁",
    "我妹妹Lena下个月在波尔图结婚",
    "My landlord raised the rent by ten percent",
    "The train to Leeds leaves at 7:40",
    "idem test 1",
    "x",
)


@pytest.fixture
def e5_settings(tmp_path: Path, test_database_url: str | None) -> Settings:
    settings = Settings(
        home=tmp_path,
        agent="alice",
        embedder="local",
        redis_url="redis://127.0.0.1:1/0",
        database_url=test_database_url,
    )
    service = compose(settings, jobs=NullJobQueue(), llm=None)
    try:
        for memory in MEMORIES:
            service.write_narrative("alice", NarrativeIn(gesture=memory))
        while service.embed_pending(None, batch_size=32, max_batches=1).embedded:
            pass
    finally:
        service.close()
    return settings


async def test_a_query_that_matches_nothing_gets_no_recalled_or_keyword_items(
    e5_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(e5_settings, jobs=dispatcher), raise_exceptions=True) as client:
        block = await call(client, "memory_prefetch", query="zxqv plorth wibble", session_id="s1")
    assert block["items"] == [] and dispatcher.attention == []


async def test_an_english_question_recalls_the_chinese_memory_about_it_and_nothing_else(
    e5_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(e5_settings, jobs=dispatcher), raise_exceptions=True) as client:
        block = await call(client, "memory_prefetch", query="what is my father allergic to?", session_id="s1")
    assert [item["tier"] for item in block["items"]] == ["T1"]
    assert "爸爸对花生过敏" in block["items"][0]["text"] and "dense" in block["items"][0]["reason"]


async def test_a_search_hit_says_which_signals_found_it_and_a_hit_by_rank_alone_says_none(
    e5_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(e5_settings, jobs=dispatcher), raise_exceptions=True) as client:
        found = await call(client, "memory_search", query="what is my father allergic to?", limit=3)
    first, *rest = found["hits"]
    assert first["text"] == "爸爸对花生过敏" and {"dense", "ctx"} <= set(first["evidence"])
    assert rest and all(hit["evidence"] == [] for hit in rest)
