"""A server's life: what it starts beside answering stops before its store closes."""

from __future__ import annotations

import threading
import time

import pytest
from mcp import Client
from mcp_helpers import RecordingJobQueue

from mcp_server import app
from mcp_server.app import create_server
from tideline_core.service import Service
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio


async def test_a_server_stopped_as_it_starts_never_has_its_warm_up_open_the_store_after_closing_it(
    local_settings: Settings, dispatcher: RecordingJobQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    happened: list[str] = []
    warmed_up = threading.Event()
    warm_up, close = Service.warm_up, Service.close

    def slow_tokenizer() -> None:  # the warm-up's first step, long enough for the client to leave meanwhile
        time.sleep(0.5)

    def recorded_warm_up(service: Service, agent_id: str) -> object:
        happened.append("warm up")
        warmed_up.set()
        return warm_up(service, agent_id)

    def recorded_close(service: Service) -> None:
        happened.append("close")
        close(service)

    monkeypatch.setattr(app, "load_tokenizer", slow_tokenizer)
    monkeypatch.setattr(Service, "warm_up", recorded_warm_up)
    monkeypatch.setattr(Service, "close", recorded_close)
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        await client.list_tools()
    warmed_up.wait(1.5)  # time for a warm-up that would still run after the close
    assert happened == ["close"]
