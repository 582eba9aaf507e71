"""End to end: `tideline serve` as a subprocess on stdio, driven the way an agent runtime drives it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import call

from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio


def tideline_command() -> tuple[str, list[str]]:
    """The installed `tideline` script next to this interpreter, else the module form."""
    script = Path(sys.executable).with_name("tideline")
    if script.exists():
        return str(script), []
    found = shutil.which("tideline")
    return (found, []) if found else (sys.executable, ["-m", "tideline_cli"])


def server_env(settings: Settings) -> dict[str, str]:
    # Only what a runtime's MCP config would set; the parent's TIDELINE_* variables are not inherited.
    return {
        "TIDELINE_HOME": str(settings.home),
        "TIDELINE_REDIS_URL": str(settings.redis_url),
        "TIDELINE_DATABASE_URL": settings.resolved_database_url,
        "TIDELINE_AGENT": "alice",
        "TIDELINE_EMBEDDER": "none",
        "TIDELINE_LOG_LEVEL": "WARNING",
    }


async def test_an_agent_runtime_lists_tools_writes_and_searches_over_stdio(settings: Settings) -> None:
    command, prefix = tideline_command()
    params = StdioServerParameters(command=command, args=[*prefix, "serve"], env=server_env(settings))
    async with Client(params, mode="legacy", raise_exceptions=True, read_timeout_seconds=30) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        turn = await call(client, "context_record", role="user", content="记得帮我预约周五的牙医", session_id="cli")
        written = await call(
            client,
            "memory_write",
            gesture="答应了周五陪她去看牙医",
            tags=["约定"],
            source_links=[turn["id"]],
            importance=4,
        )
        found = await call(client, "memory_search", query="牙医")
        status = await call(client, "memory_status")
    assert {"memory_write", "memory_search", "context_record", "memory_status"} <= tools and len(tools) == 25
    assert written["queued"] is True and written["embedding"] == "pending"
    assert {(hit["kind"], hit["id"]) for hit in found["hits"]} == {
        ("narrative", written["id"]),
        ("context", turn["id"]),
    }
    assert found["degraded"] is not None  # TIDELINE_EMBEDDER=none: keyword-only, and the result says so
    assert status["agent"] == "alice" and status["counts"]["narratives"] == 1


@pytest.mark.parametrize("stdin_is", ["a pipe", "a file"])
def test_stdout_carries_nothing_but_protocol_messages(settings: Settings, tmp_path: Path, stdin_is: str) -> None:
    # A pipe is read by the event loop itself (mcp_server.pipes); anything else by the SDK's transport.
    command, prefix = tideline_command()
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    # Closing stdin after one request ends the server; every stdout line must then be one JSON-RPC message.
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(request) + "\n")
    with requests.open() as from_file:
        done = subprocess.run(
            [command, *prefix, "serve"],
            input=requests.read_text() if stdin_is == "a pipe" else None,
            stdin=from_file if stdin_is == "a file" else None,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": str(Path(sys.executable).parent), **server_env(settings)},
        )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines, done.stderr
    messages = [json.loads(line) for line in lines]
    assert messages[0]["id"] == 1 and messages[0]["result"]["serverInfo"]["name"] == "tideline"
    assert all(message.get("jsonrpc") == "2.0" for message in messages)


async def test_a_server_answers_before_its_model_is_built_and_search_says_so_until_it_is(
    settings: Settings, tmp_path: Path, wait_until: object
) -> None:
    # An empty model cache: building the model takes seconds; the server must not make the client
    # wait for it, and a search that comes first answers by keyword and says why. (A query may wait
    # for the model up to its timeout; a short one makes the early search's answer certain.)
    # A bare `tideline serve` has no worker: once the model is there, search says why it finds nothing.
    cache = tmp_path / "empty-model-cache"
    env = {
        **server_env(settings),
        "TIDELINE_EMBEDDER": "local",
        "TIDELINE_MODEL_CACHE": str(cache),
        "TIDELINE_QUERY_EMBEDDING_TIMEOUT": "0.05",
    }
    command, prefix = tideline_command()
    params = StdioServerParameters(command=command, args=[*prefix, "serve"], env=env)
    async with Client(params, mode="legacy", raise_exceptions=True, read_timeout_seconds=60) as client:
        tools = (await client.list_tools()).tools
        built_when_listed = list(cache.glob("*.onnx"))
        await call(client, "memory_write", gesture="We fed the ducks at the lake")
        early = await call(client, "memory_search", query="birds by the water", mode="dense")
        later = early
        for _ in range(120):  # the model finishes building in the background
            if later["mode"] == "dense":
                break
            await anyio.sleep(0.5)
            later = await call(client, "memory_search", query="birds by the water", mode="dense")
        status = await call(client, "memory_status")
    assert len(tools) == 25 and built_when_listed == []
    assert early["degraded"] is not None and "still loading" in early["degraded"] and early["mode"] == "keyword"
    assert later["mode"] == "dense" and later["hits"] == [] and later["unembedded"] == 1
    no_worker = "1 row still without an embedding and no ingest worker is running"
    assert no_worker in later["degraded"] and "still loading" not in later["degraded"]
    assert status["notice"] is not None and no_worker in status["notice"] and "tideline up" in status["notice"]
