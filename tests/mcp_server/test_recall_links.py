"""An agent reading its memories over MCP sees which source links the scan inferred, marked so, with their score."""

from __future__ import annotations

from pathlib import Path

import pytest
from links_helpers import AGENT, inferred_links, load
from mcp import Client
from mcp_helpers import RecordingJobQueue, call

from mcp_server.app import create_server
from tideline_core.compose import compose
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings


@pytest.mark.anyio
async def test_recall_shows_an_inferred_link_apart_from_written_ones_marked_inferred_with_its_score(
    tmp_path: Path, test_database_url: str | None, dispatcher: RecordingJobQueue
) -> None:
    settings = Settings(
        home=tmp_path, agent=AGENT, embedder="local", redis_url="redis://127.0.0.1:1/0", database_url=test_database_url
    )
    service = compose(settings, jobs=NullJobQueue(), llm=None)
    try:
        load(service)
        service.run_stage("scan", AGENT, trigger="manual", task_id="scan-1")
        links = inferred_links(service)
    finally:
        service.close()
    assert links
    async with Client(create_server(settings, jobs=dispatcher), raise_exceptions=True) as client:
        recalled = await call(client, "memory_recall", limit=100)
    shown = {n["id"]: n for n in recalled["narratives"]}
    for narrative_id, turns in links.items():
        narrative = shown[narrative_id]
        assert narrative["source_links"] == []
        assert [link["context_id"] for link in narrative["inferred_links"]] == sorted(turns)
        assert all(link["inferred"] is True and link["score"] > 0 for link in narrative["inferred_links"])
    assert all(n["inferred_links"] == [] for i, n in shown.items() if i not in links)
