"""Corrections win: an amendment's words find its memory at once, with no worker running, and every place an agent
meets the memory (search, recall, the session-start and per-turn blocks) shows it with its latest amendment, marked.
An agent's own digest is a memory like any other; only the dream's own digests and extracts stay out of search."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from dream_helpers import record_day
from mcp import Client
from mcp_helpers import RecordingJobQueue, call
from sqlalchemy import select

from mcp_server.app import create_server
from tideline_core.compose import compose
from tideline_core.embedding import NoEmbedder
from tideline_core.settings import Settings
from tideline_core.store.schema import Narrative
from tideline_core.text.dates import utcnow

pytestmark = pytest.mark.anyio

SWIM = "周四晚上去游泳，教练叫小林"
MOVED = "教练小林下个月换到周五晚上"


def today() -> str:
    return f"{utcnow():%Y-%m-%d}"


async def write_swim(client: Client) -> int:
    written = await call(client, "memory_write", gesture=SWIM, importance=5, emotional=4, tags=["游泳"])
    return int(written["id"])


def narrative_hits(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [h for h in result["hits"] if h["kind"] == "narrative"]


async def test_an_amendments_words_find_its_memory_at_once_with_no_worker_running(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        memory = await write_swim(client)
        before = await call(client, "memory_search", query="周五", kinds="narratives")  # the index is built now
        queued = len(dispatcher.embeds)
        await call(client, "memory_amend", narrative_id=memory, note=MOVED)
        after = await call(client, "memory_search", query="周五", kinds="narratives")
        english = await call(client, "memory_write", gesture="I said the meeting was on Monday")
        await call(client, "memory_amend", narrative_id=english["id"], note="It was moved to Tuesday afternoon.")
        tuesday = await call(client, "memory_search", query="Tuesday afternoon", mode="keyword")
    assert not narrative_hits(before)
    (hit,) = narrative_hits(after)
    assert hit["id"] == memory
    assert hit["text"] == f"{SWIM} — amended {today()}: {MOVED}"
    assert hit["amended"]["note"] == MOVED
    assert [h["id"] for h in narrative_hits(tuesday)] == [english["id"]]
    assert len(dispatcher.embeds) > queued, "the amended memory's embedding is queued again, to read the note"


async def test_recall_gives_the_latest_amendment_with_when_it_was_written(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        memory = await write_swim(client)
        await call(client, "memory_amend", narrative_id=memory, note="先试一次")
        await call(client, "memory_amend", narrative_id=memory, note=MOVED)
        (recalled,) = (await call(client, "memory_recall"))["narratives"]
    assert recalled["gesture"] == SWIM and recalled["amendments"] == ["先试一次", MOVED]
    assert recalled["amended"]["note"] == MOVED and recalled["amended"]["at"].startswith(today())


async def test_the_session_start_block_shows_the_memory_with_its_correction(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        memory = await write_swim(client)
        first = await call(client, "memory_inject", session_id="s1")
        await call(client, "memory_amend", narrative_id=memory, note=MOVED)
        block = await call(client, "memory_inject", session_id="s2")
    assert SWIM in first["text"] and MOVED not in first["text"]
    (item,) = [i for i in block["items"] if i["tier"] == "T2"]
    assert item["id"] == memory and item["text"].endswith(f" — amended {today()}: {MOVED}")
    assert item["text"] in block["text"] and block["version"] != first["version"]


async def test_the_turns_block_shows_the_correction_and_brings_back_a_memory_amended_since_it_was_shown(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        memory = await write_swim(client)
        first = await call(client, "memory_prefetch", query="游泳", session_id="s1")
        await call(client, "memory_amend", narrative_id=memory, note=MOVED)
        again = await call(client, "memory_prefetch", query="游泳", session_id="s1")
        then = await call(client, "memory_prefetch", query="游泳", session_id="s1")
    assert [i["id"] for i in first["items"]] == [memory] and MOVED not in first["text"]
    (item,) = again["items"]
    assert item["id"] == memory and item["text"].endswith(f" — amended {today()}: {MOVED}")
    assert not then["items"], "shown with its correction once, the memory is not repeated"


async def test_a_memory_cut_to_fit_the_turns_budget_keeps_its_correction(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    long = "We planned the swimming lessons in detail. " * 12 + "The coach is Xiaolin and lessons are on Thursday."
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        written = await call(client, "memory_write", gesture=long[:1000])
        await call(client, "memory_amend", narrative_id=written["id"], note="Lessons move to Friday next month.")
        block = await call(client, "memory_prefetch", query="swimming lessons", session_id="s1", budget=120)
    (item,) = block["items"]
    assert item["clipped"] and block["tokens"] <= 120
    assert item["text"].endswith(" — amended " + today() + ": Lessons move to Friday next month.")


async def test_an_agents_own_digest_is_found_by_its_words_and_shown_like_any_memory(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    summary = "Weekly summary: the quarterly budget review moved to Friday"
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        written = await call(client, "memory_write", gesture=summary, narrative_type="digest", importance=5)
        found = await call(client, "memory_search", query="quarterly budget review")
        block = await call(client, "memory_inject", session_id="s1")
    assert [h["id"] for h in narrative_hits(found)] == [written["id"]]
    assert summary in block["text"]


async def test_the_dreams_own_digests_and_extracts_stay_out_of_search_beside_the_agents_digest(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    dreamer = compose(local_settings, jobs=RecordingJobQueue(), embedder=NoEmbedder())
    try:
        record_day(dreamer, "alice", start=utcnow() - timedelta(hours=3))
        dreamer.run_stage("solidify", "alice", trigger="manual", task_id="t-1")
        with dreamer.db.read() as conn:
            dreams = conn.execute(
                select(Narrative.id, Narrative.gesture, Narrative.narrative_type).where(Narrative.origin != "agent")
            ).all()
    finally:
        dreamer.close()
    assert any(d.narrative_type == "digest" for d in dreams)
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        mine = await call(client, "memory_write", gesture="My digest of the day", narrative_type="digest")
        found = [
            await call(client, "memory_search", query=" ".join(d.gesture.split()[:6]), kinds="narratives")
            for d in dreams
        ]
        own = await call(client, "memory_search", query="my digest of the day", kinds="narratives")
    hidden = {d.id for d in dreams}
    assert all(not {h["id"] for h in result["hits"]} & hidden for result in found)
    assert [h["id"] for h in own["hits"]] == [mine["id"]]
