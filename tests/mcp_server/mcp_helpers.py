"""Calling tools the way an agent runtime does, and checking the database behind the server's back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp import Client
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tideline_core.settings import Settings


@dataclass
class RecordingJobQueue:
    """A job queue stand-in that remembers what the server asked of it (for tests of the read/write path)."""

    embeds: list[str] = field(default_factory=list)
    attention: list[tuple[str, list[tuple[int, float | None]], str]] = field(default_factory=list)
    stages: list[tuple[str, str]] = field(default_factory=list)
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

    def queue_depths(self) -> dict[str, int] | None:
        return {"ingest": 0, "dream": 0}

    def workers(self) -> dict[str, list[str]] | None:
        return self.live


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
