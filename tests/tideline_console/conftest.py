"""The console over a fresh store of the run's backend, keyword-only, driven by Starlette's test client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from console_helpers import AGENT, LOOPBACK
from service_helpers import FakeQueue
from starlette.testclient import TestClient

from tideline_console.app import create_app
from tideline_core.compose import compose
from tideline_core.embedding import NoEmbedder
from tideline_core.service import Service
from tideline_core.settings import Settings


@pytest.fixture
def queue() -> FakeQueue:
    return FakeQueue()


@pytest.fixture
def console_for(
    tmp_path: Path, store_url: str, queue: FakeQueue
) -> Iterator[Callable[..., tuple[Service, TestClient]]]:
    """A console with these settings over one service; the client is its browser (cookies kept)."""
    opened: list[tuple[Service, TestClient]] = []

    def make(base_url: str = LOOPBACK, **given: Any) -> tuple[Service, TestClient]:
        settings = Settings(home=tmp_path, embedder="none", database_url=store_url, agent=AGENT, **given)
        service = compose(settings, jobs=queue, embedder=NoEmbedder())
        queue.service = service
        client = TestClient(create_app(settings, service=service), base_url=base_url, follow_redirects=False)
        client.__enter__()
        opened.append((service, client))
        return service, client

    yield make
    for service, client in opened:
        client.__exit__(None, None, None)
        service.close()


@pytest.fixture
def console(console_for: Callable[..., tuple[Service, TestClient]]) -> tuple[Service, TestClient]:
    return console_for()
