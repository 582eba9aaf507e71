"""The service over a fresh store of the run's backend, keyword-only, with a job queue that records what it is asked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from service_helpers import FakeQueue

from tideline_core.compose import compose
from tideline_core.embedding import NoEmbedder
from tideline_core.service import Service
from tideline_core.settings import Settings


@pytest.fixture
def queue() -> FakeQueue:
    return FakeQueue()


@pytest.fixture
def service(tmp_path: Path, store_url: str, queue: FakeQueue) -> Iterator[Service]:
    settings = Settings(home=tmp_path, embedder="none", database_url=store_url)
    built = compose(settings, jobs=queue, embedder=NoEmbedder())
    queue.service = built
    yield built
    built.close()
