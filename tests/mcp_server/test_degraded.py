"""When the query embedder is unreachable, search still answers, by keyword, and says so."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from mcp import Client
from mcp_helpers import RecordingJobQueue, call

from mcp_server.app import create_server
from tests.ports import free_port
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
async def test_search_falls_back_to_keywords_and_says_so_when_the_embedder_is_down(
    local_settings: Settings, dispatcher: RecordingJobQueue, mode: str
) -> None:
    settings = local_settings.model_copy(
        update={
            "embedder": "http",
            "embedding_url": f"http://127.0.0.1:{free_port()}/v1/embeddings",
            "query_embedding_timeout": 1.0,
        }
    )
    async with Client(create_server(settings, jobs=dispatcher), raise_exceptions=True) as client:
        written = await call(client, "memory_write", gesture="我们在公园里讨论了新的服务")
        started = time.monotonic()
        found = await call(client, "memory_search", query="公园", mode=mode)
        elapsed = time.monotonic() - started
        turns = await call(client, "context_search", query="公园", mode=mode)
    assert found["mode"] == "keyword" and "keyword-only" in found["degraded"]
    assert [hit["id"] for hit in found["hits"]] == [written["id"]]
    assert turns["degraded"] is not None and turns["hits"] == []
    assert elapsed < settings.query_embedding_timeout + 1.0


async def test_keyword_mode_never_asks_the_embedder_and_is_not_degraded(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    settings = local_settings.model_copy(
        update={"embedder": "http", "embedding_url": f"http://127.0.0.1:{free_port()}/embed_batch"}
    )
    async with Client(create_server(settings, jobs=dispatcher), raise_exceptions=True) as client:
        await call(client, "memory_write", gesture="a quiet morning")
        found = await call(client, "memory_search", query="morning", mode="keyword")
    assert found["degraded"] is None and found["mode"] == "keyword" and len(found["hits"]) == 1


async def test_a_model_cache_that_cannot_be_written_leaves_search_keyword_only_and_names_the_setting(
    local_settings: Settings, dispatcher: RecordingJobQueue, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the model cache should be")
    # A query waits long enough for the failing load to say why: on a busy machine its imports alone can take
    # longer than the default timeout, and the answer is then, rightly, "still loading".
    update = {"embedder": "local", "model_cache": blocker / "models", "query_embedding_timeout": 60.0}
    settings = local_settings.model_copy(update=update)
    async with Client(create_server(settings, jobs=dispatcher), raise_exceptions=True) as client:
        written = await call(client, "memory_write", gesture="我们在湖边讨论了搬家的计划")
        found = await call(client, "memory_search", query="搬家", mode="hybrid")
    assert found["mode"] == "keyword" and "TIDELINE_MODEL_CACHE" in found["degraded"]
    assert [hit["id"] for hit in found["hits"]] == [written["id"]]
    assert blocker.read_text() == "a file where the model cache should be"


async def test_rows_waiting_for_a_running_worker_are_counted_but_not_flagged(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    # The query may wait for the model however long its first build takes: this is about the count.
    settings = local_settings.model_copy(update={"embedder": "local", "query_embedding_timeout": 600.0})
    dispatcher.live = {"ingest@laptop": ["ingest"]}
    async with Client(create_server(settings, jobs=dispatcher), raise_exceptions=True) as client:
        await call(client, "memory_write", gesture="We fed the ducks at the lake")
        found = await call(client, "memory_search", query="ducks", mode="hybrid")
        keyword = await call(client, "memory_search", query="ducks", mode="keyword")
        status = await call(client, "memory_status")
    assert found["unembedded"] == 1 and found["degraded"] is None, "an ingest worker will embed it in a moment"
    assert keyword["unembedded"] == 0, "keyword search does not need embeddings"
    assert status["embeddings_pending"] == 1 and status["notice"] is None


async def test_rows_waiting_with_no_reachable_queue_say_so(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    settings = local_settings.model_copy(update={"embedder": "local", "query_embedding_timeout": 600.0})
    dispatcher.live = None
    async with Client(create_server(settings, jobs=dispatcher), raise_exceptions=True) as client:
        await call(client, "memory_write", gesture="We fed the ducks at the lake")
        found = await call(client, "memory_search", query="ducks")
    assert "1 row still without an embedding: the job queue (Redis) cannot be reached" in found["degraded"]
    # It says what to start, not where to look.
    assert "run `tideline up`" in found["degraded"] and "TIDELINE_REDIS_URL" in found["degraded"]
    assert "see `tideline status`" not in found["degraded"]
    assert found["hits"], "keyword search still finds it"
