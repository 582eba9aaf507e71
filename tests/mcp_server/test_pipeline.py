"""The whole write path on the real stack: MCP tool → SQLite → Redis → Celery worker → embeddings → search."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client
from mcp_helpers import call, row_count

from mcp_server.app import create_server
from tests.ports import free_port
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from workers.queues import TaskName

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

PARK = "傍晚和小林在公园散步，聊了很久他的新工作"
CAT = "The cat knocked a glass of water off the kitchen table and looked proud of it"
TAXES = "Filed the quarterly tax forms with the accountant, two days before the deadline"


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    # A one-second grace lets the reconciler sweep a write made while the broker was down without a long wait.
    return make_settings(reconcile_grace_seconds=1)


def pending(settings: Settings) -> int:
    return row_count(settings, "narratives WHERE embedding_state = 'pending'") + row_count(
        settings, "context_turns WHERE embedding_state = 'pending'"
    )


async def test_a_write_is_keyword_visible_at_once_then_embedded_by_the_worker_and_found_by_meaning(
    settings: Settings, database: Database, celery_worker: Any, wait_until: Callable[..., Any]
) -> None:
    async with Client(create_server(settings), raise_exceptions=True) as client:
        park = await call(client, "memory_write", gesture=PARK, tags=["小林"])
        cat = await call(client, "memory_write", gesture=CAT, tags=["home"])
        await call(client, "memory_write", gesture=TAXES, tags=["admin"])
        turn = await call(
            client, "context_record", role="user", content="我们明天去服务中心办手续吧", session_id="s1", speaker="Mia"
        )
        right_away = {
            "公园": await call(client, "memory_search", query="公园", mode="keyword"),
            "服务": await call(client, "context_search", query="服务", mode="keyword"),
            "glass": await call(client, "memory_search", query="glass", mode="keyword"),
        }

        wait_until(lambda: pending(settings) == 0, timeout=30, message="the worker to embed every new row")
        pet = await call(client, "memory_search", query="my pet made a mess at home", mode="dense", limit=1)
        walk = await call(
            client, "memory_search", query="晚上和朋友出去走走", mode="dense", kinds="narratives", limit=1
        )
        errand = await call(client, "context_search", query="去办事处处理手续", mode="dense", limit=1)
        asked = await call(client, "context_search", query="What errand did Mia plan?", limit=1)
        asked_all = await call(client, "memory_search", query="What errand did Mia plan?", limit=1)
        hybrid = await call(client, "memory_search", query="cat glass")
        status = await call(client, "memory_status")

    assert [h["id"] for h in right_away["公园"]["hits"]] == [park["id"]]
    assert [h["id"] for h in right_away["服务"]["hits"]] == [turn["id"]]
    assert [h["id"] for h in right_away["glass"]["hits"]] == [cat["id"]]
    assert park["queued"] is True and cat["queued"] is True
    assert (pet["mode"], pet["degraded"], pet["hits"][0]["id"]) == ("dense", None, cat["id"])
    assert walk["hits"][0]["id"] == park["id"] and "dense" in walk["hits"][0]["signals"]
    assert errand["hits"][0]["id"] == turn["id"]
    # Over turns the speaker signal carries who, so the name is left out of what is embedded; not so over memories.
    assert asked["embedded"] == ["What errand did plan?"] and asked["hits"][0]["id"] == turn["id"]
    assert asked_all["embedded"] == ["What errand did Mia plan?"]
    assert hybrid["hits"][0]["id"] == cat["id"] and {"kw", "dense"} <= set(hybrid["hits"][0]["signals"])
    assert status["embeddings_pending"] == 0 and status["broker_reachable"] is True
    # Search hits travel to the attention log through the ingest queue, never written by the server itself.
    wait_until(lambda: row_count(settings, "attention_log") > 0, timeout=15, message="attention hits to be logged")


async def test_a_write_while_the_broker_is_down_succeeds_fast_and_is_embedded_once_it_is_back(
    settings: Settings, database: Database, celery_app: Any, celery_worker: Any, wait_until: Callable[..., Any]
) -> None:
    cut_off = settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    async with Client(create_server(cut_off), raise_exceptions=True) as client:
        started = time.monotonic()
        written = await call(client, "memory_write", gesture=CAT, tags=["home"])
        elapsed = time.monotonic() - started
        found = await call(client, "memory_search", query="kitchen table", mode="keyword")
        status = await call(client, "memory_status")
    assert written["queued"] is False and elapsed < 1.0
    assert [h["id"] for h in found["hits"]] == [written["id"]]
    assert status["broker_reachable"] is False and status["queue_depths"] is None and status["embeddings_pending"] == 1

    # The broker is back (the worker's Redis): after the grace period the reconciler re-enqueues the row.
    wait_until(lambda: time.monotonic() - started > settings.reconcile_grace_seconds, timeout=5)
    celery_app.send_task(str(TaskName.RECONCILE))  # what beat does every interval
    wait_until(lambda: pending(settings) == 0, timeout=30, message="the reconciled row to be embedded")
    async with Client(create_server(settings), raise_exceptions=True) as client:
        pet = await call(client, "memory_search", query="a pet broke something", mode="dense", limit=1)
    assert pet["hits"][0]["id"] == written["id"]
