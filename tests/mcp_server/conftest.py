"""Fixtures for the MCP server tests: keyword-only settings on a fresh file, and a recording dispatcher."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_helpers import RecordingJobQueue

from tideline_core.settings import Settings


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def dispatcher() -> RecordingJobQueue:
    return RecordingJobQueue()


@pytest.fixture
def local_settings(tmp_path: Path) -> Settings:
    """Keyword-only settings on a fresh SQLite file (semantic search has its own tests)."""
    return Settings(home=tmp_path, agent="alice", embedder="none", redis_url="redis://127.0.0.1:1/0")
