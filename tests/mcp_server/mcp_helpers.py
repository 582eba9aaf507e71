"""Calling tools the way an agent runtime does, serving the HTTP app, and checking the database behind its back."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from mcp import Client
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from mcp_server.app import http_app
from tideline_core.service import TaskResult
from tideline_core.settings import Settings


@dataclass
class RecordingJobQueue:
    """A job queue stand-in that remembers what the server asked of it (for tests of the read/write path)."""

    embeds: list[str] = field(default_factory=list)
    attention: list[tuple[str, list[tuple[int, float | None]], str]] = field(default_factory=list)
    stages: list[tuple[str, str]] = field(default_factory=list)
    waits: list[tuple[str, float]] = field(default_factory=list)  # (task id, seconds) of every wait for a result
    live: dict[str, list[str]] | None = field(default_factory=dict)  # the workers it reports (None: unreachable)

    def embed(self, agent_id: str, *, again: bool = False) -> bool:
        self.embeds.append(agent_id)
        return True

    def log_attention(self, agent_id: str, hits: Sequence[tuple[int, float | None]], source: str) -> bool:
        self.attention.append((agent_id, list(hits), source))
        return True

    def start_stage(self, agent_id: str, stage: str, *, dry_run: bool = False) -> str | None:
        self.stages.append((agent_id, stage + (" (dry run)" if dry_run else "")))
        return f"task-{len(self.stages)}"

    def start_dream(self, agent_id: str) -> str | None:
        return self.start_stage(agent_id, "dream")

    def task_result(self, task_id: str, wait: float) -> TaskResult | None:
        self.waits.append((task_id, wait))
        return TaskResult("queued")

    def queue_depths(self) -> dict[str, int] | None:
        return {"ingest": 0, "dream": 0}

    def workers(self) -> dict[str, list[str]] | None:
        return self.live


@contextmanager
def serving(settings: Settings, dispatcher: RecordingJobQueue, path: str = "") -> Iterator[str]:
    """The production HTTP app under uvicorn in a thread, on loopback at `settings.http_port`; yields `path`'s URL."""
    server = uvicorn.Server(
        uvicorn.Config(
            http_app(settings, jobs=dispatcher),
            host="127.0.0.1",
            port=settings.http_port,
            log_config=None,
            log_level="warning",
            lifespan="on",
        )
    )
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    # uvicorn flips `started` once the socket listens; wait on the thread meanwhile rather than sleeping blind.
    while not server.started:
        if not thread.is_alive():
            pytest.fail("uvicorn exited during start-up")
        thread.join(0.02)
    try:
        yield f"http://127.0.0.1:{settings.http_port}{path}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail; the error text the calling model reads."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return "\n".join(block.text for block in result.content if block.type == "text")


def row_count(settings: Settings, table: str) -> int:
    """Rows in a table, read straight from the database (not through the server under test)."""
    engine = create_engine(settings.resolved_database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
    finally:
        engine.dispose()
