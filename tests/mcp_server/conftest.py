"""Fixtures for the MCP server tests: keyword-only settings on a fresh store, and a recording dispatcher."""

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
def local_settings(tmp_path: Path, test_database_url: str | None) -> Settings:
    """Keyword-only settings on a fresh store of the run's backend (semantic search has its own tests)."""
    return Settings(
        home=tmp_path, agent="alice", embedder="none", redis_url="redis://127.0.0.1:1/0", database_url=test_database_url
    )
