"""An agent searching by a short word through MCP finds the memories holding it, not those whose words it begins."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp_helpers import RecordingJobQueue, call

from mcp_server.app import create_server
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio


async def test_memory_search_for_go_finds_going_not_goggles(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        await call(client, "memory_write", gesture="Bought new swimming goggles for the pool")
        going = await call(client, "memory_write", gesture="We go to the lake every summer")
        await call(client, "memory_write", gesture="Thursday is the team sync")
        go = await call(client, "memory_search", query="go", mode="keyword", kinds="narratives")
        thu = await call(client, "memory_search", query="Thu", mode="keyword", kinds="narratives")

    assert [hit["id"] for hit in go["hits"]] == [going["id"]]
    assert thu["hits"] == []
