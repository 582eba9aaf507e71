"""The CLI's environment for tests that run `tideline` as a subprocess beside the in-process worker, and a home
short enough for the stack's Unix sockets."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tideline_core.settings import Settings


@pytest.fixture
def env(settings: Settings) -> dict[str, str]:
    """The CLI's environment: the same data dir, Redis and agent as the worker fixture's settings."""
    values = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    values.update(
        {
            "TIDELINE_HOME": str(settings.home),
            "TIDELINE_REDIS_URL": str(settings.redis_url),
            "TIDELINE_DATABASE_URL": settings.resolved_database_url,
            "TIDELINE_EMBEDDER": settings.embedder,
            "TIDELINE_AGENT": "alice",
        }
    )
    return values


@pytest.fixture
def short_home() -> Iterator[Path]:
    """A fresh data dir under the temp dir's root: Unix socket paths must stay short (about 107 bytes)."""
    home = Path(tempfile.mkdtemp(prefix="tlup-"))
    yield home
    shutil.rmtree(home, ignore_errors=True)
