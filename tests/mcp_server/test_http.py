"""Streamable HTTP on a loopback port: bearer tokens bind each caller to one agent, and nothing else gets in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import RecordingJobQueue, call, refused, serving

from mcp_server.app import http_app
from tests.ports import free_port
from tideline_core.errors import ConfigurationError
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio

ALICE_TOKEN = "alice-token-7f3a9c"
BOB_TOKEN = "bob-token-0d81e2"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def token_settings(local_settings: Settings) -> Settings:
    return local_settings.model_copy(
        update={
            "http_host": "127.0.0.1",
            "http_port": free_port(),
            "http_tokens": f"{ALICE_TOKEN}:alice,{BOB_TOKEN}:bob",
        }
    )


@asynccontextmanager
async def as_agent(url: str, token: str) -> AsyncIterator[Client]:
    """An MCP client that presents `token` on every request, as a remote agent runtime would."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), raise_exceptions=True) as client,
    ):
        yield client


async def test_each_token_reads_and_writes_only_its_own_agents_memory(
    token_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    with serving(token_settings, dispatcher) as url:
        async with as_agent(url, ALICE_TOKEN) as alice:
            written = await call(alice, "memory_write", gesture="alice's diary: the 钥匙 is in the drawer")
            alice_finds = await call(alice, "memory_search", query="钥匙 drawer")
            alice_status = await call(alice, "memory_status")
        async with as_agent(url, BOB_TOKEN) as bob:
            bob_finds = await call(bob, "memory_search", query="钥匙 drawer")
            bob_recall = await call(bob, "memory_recall")
            bob_amend = await refused(bob, "memory_amend", narrative_id=written["id"], note="bob was here")
            bob_status = await call(bob, "memory_status")
    assert [hit["id"] for hit in alice_finds["hits"]] == [written["id"]] and alice_status["agent"] == "alice"
    assert bob_finds["hits"] == [] and bob_recall["count"] == 0 and "not found" in bob_amend
    assert bob_status["agent"] == "bob" and bob_status["counts"]["narratives"] == 0
    assert dispatcher.embeds == ["alice"]


async def test_requests_without_a_valid_token_get_401_and_health_needs_none(
    token_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    with serving(token_settings, dispatcher) as url:
        async with httpx2.AsyncClient() as http:
            health = await http.get(f"{url}/healthz")
            anonymous = await http.post(f"{url}/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            forged = await http.post(
                f"{url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer alice-token-7f3a9d"}
            )
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Bearer")
    assert forged.status_code == 401


async def test_a_session_opened_with_one_token_cannot_be_used_with_another(
    token_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    with serving(token_settings, dispatcher) as url:
        async with httpx2.AsyncClient() as http:
            opened = await http.post(
                f"{url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {ALICE_TOKEN}"}
            )
            session = opened.headers["mcp-session-id"]
            hijack = await http.post(
                f"{url}/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "memory_recall", "arguments": {}},
                },
                headers={
                    **MCP_HEADERS,
                    "Authorization": f"Bearer {BOB_TOKEN}",
                    "Mcp-Session-Id": session,
                    "MCP-Protocol-Version": "2025-06-18",
                },
            )
    assert opened.status_code == 200 and hijack.status_code == 404


async def test_on_loopback_without_tokens_http_serves_the_configured_agent(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    settings = local_settings.model_copy(update={"http_host": "127.0.0.1", "http_port": free_port(), "http_tokens": ""})
    with serving(settings, dispatcher) as url:
        async with Client(f"{url}/mcp", raise_exceptions=True) as client:
            status = await call(client, "memory_status")
    assert status["agent"] == "alice"


async def test_any_loopback_address_serves_without_tokens_and_still_refuses_a_rebound_host_name(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    port = free_port()
    settings = local_settings.model_copy(update={"http_host": "127.0.0.2", "http_port": port, "http_tokens": ""})
    with serving(settings, dispatcher) as url:
        async with httpx2.AsyncClient() as http:
            own = await http.post(f"{url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": f"127.0.0.2:{port}"})
            rebound = await http.post(
                f"{url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": f"evil.example:{port}"}
            )
    assert own.status_code == 200 and rebound.status_code == 421


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "127.0.0.1.example.com"])
def test_http_refuses_to_start_beyond_loopback_without_tokens(local_settings: Settings, host: str) -> None:
    with pytest.raises(ConfigurationError, match="TIDELINE_HTTP_TOKENS"):
        http_app(local_settings.model_copy(update={"http_host": host, "http_tokens": ""}))


def test_a_malformed_token_list_is_refused(local_settings: Settings) -> None:
    with pytest.raises(ConfigurationError, match="TOKEN:AGENT"):
        http_app(local_settings.model_copy(update={"http_host": "0.0.0.0", "http_tokens": "just-a-token"}))
