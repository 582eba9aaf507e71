"""A client's mistake gets an error it can act on: -32602 naming what it got wrong, one wording for every tool, and
no traceback in the server's log; a tool's bad argument comes back as an error result the model can correct."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_helpers import RecordingJobQueue, refused

from mcp_server.app import create_server
from tideline_core.service.inject import InjectOps
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio

INVALID_PARAMS = -32602

PROTOCOL_MISTAKES: list[tuple[str, Callable[[Client], Awaitable[Any]], str]] = [
    # (case, the request, words the error must say)
    ("an unknown prompt", lambda c: c.get_prompt("tideline_nope"), "Unknown prompt: tideline_nope"),
    (
        "an argument the prompt does not take",
        lambda c: c.get_prompt("tideline_session_start", {"sesion_id": "s1"}),
        "invalid input: sesion_id: is not an argument of tideline_session_start; it takes session_id",
    ),
    (
        "a prompt argument that breaks its rule",
        lambda c: c.get_prompt("tideline_session_start", {"session_id": "s" * 257}),
        "invalid input: session_id: String should have at most 256 characters",
    ),
    (
        "another agent's injection resource",
        lambda c: c.read_resource("tideline://inject/bob"),
        "invalid input: agent: tideline://inject/bob is another agent's memory; yours is tideline://inject/alice",
    ),
    ("an unknown resource", lambda c: c.read_resource("tideline://nothing/here"), "Unknown resource"),
    ("an unknown tool", lambda c: c.call_tool("memory_forget", {}), "Unknown tool: memory_forget"),
]


@pytest.mark.parametrize(
    ("request_", "words"), [case[1:] for case in PROTOCOL_MISTAKES], ids=[case[0] for case in PROTOCOL_MISTAKES]
)
async def test_naming_what_is_not_there_is_invalid_params_with_no_traceback_logged(
    local_settings: Settings,
    dispatcher: RecordingJobQueue,
    caplog: pytest.LogCaptureFixture,
    request_: Callable[[Client], Awaitable[Any]],
    words: str,
) -> None:
    caplog.set_level(logging.INFO)
    async with Client(create_server(local_settings, jobs=dispatcher)) as client:
        with pytest.raises(MCPError) as refusal:
            await request_(client)
        assert (await client.list_tools()).tools  # the session goes on
    assert refusal.value.code == INVALID_PARAMS, refusal.value
    assert words in refusal.value.message
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []


TOOL_MISTAKES: list[tuple[str, str, dict[str, Any], str]] = [
    # (case, tool, arguments, the whole error the model reads)
    (
        "an unknown dream stage in the log",
        "memory_dream_log",
        {"stage": "nap"},
        "invalid input: stage: must be one of scan, solidify, refresh, recluster, graph, comb, drift, symbolic, "
        "got 'nap'",
    ),
    (
        "an unknown job to trigger",
        "memory_trigger",
        {"job": "nap"},
        "invalid input: job: must be one of dream, scan, solidify, refresh, recluster, graph, comb, drift, symbolic, "
        "got 'nap'",
    ),
    (
        "a gesture of only spaces",
        "memory_write",
        {"gesture": "   "},
        "invalid input: gesture: must not be empty or only whitespace",
    ),
    (
        "an idempotency key that is a number",
        "memory_write",
        {"gesture": "g", "idempotency_key": 5},
        "invalid input: idempotency_key: must be a string, got int",
    ),
    (
        "a thread title that is a number",
        "memory_write_thread",
        {"title": 5},
        "invalid input: title: must be a string, got int",
    ),
    (
        "a session id that is a list",
        "memory_inject",
        {"session_id": ["s1"]},
        "invalid input: session_id: must be a string, got list",
    ),
    (
        "a status that is a number",
        "memory_read_threads",
        {"status": 3},
        "invalid input: status: must be a string, got int",
    ),
    ("a score out of range", "memory_write", {"gesture": "g", "importance": 9}, "invalid input: importance: "),
    ("a row that does not exist", "memory_dream_log", {"run_id": 999}, "not found: "),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "error"), [case[1:] for case in TOOL_MISTAKES], ids=[case[0] for case in TOOL_MISTAKES]
)
async def test_a_tools_bad_argument_is_an_error_result_in_one_wording_naming_the_callers_field(
    local_settings: Settings,
    dispatcher: RecordingJobQueue,
    caplog: pytest.LogCaptureFixture,
    tool: str,
    arguments: dict[str, Any],
    error: str,
) -> None:
    caplog.set_level(logging.INFO)
    async with Client(create_server(local_settings, jobs=dispatcher)) as client:
        said = await refused(client, tool, **arguments)
    assert said.startswith(error), said
    assert "Error executing tool" not in said and "validation error" not in said
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []


async def test_every_tool_words_its_refusals_the_same_whatever_the_arguments_type(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher)) as client:
        tools = (await client.list_tools()).tools
        for tool in tools:
            properties = tool.input_schema.get("properties", {})
            for name in properties:
                # Required arguments come too (as wrong as the rest), so what is refused is a type, never an absence.
                sent = {arg: _wrong(properties[arg]) for arg in {name, *tool.input_schema.get("required", [])}}
                said = await refused(client, tool.name, **sent)
                assert said.startswith("invalid input: "), (tool.name, said)
                assert any(f"{arg}: " in said for arg in sent), (tool.name, sent, said)
                assert "validation error" not in said and "Error executing" not in said, (tool.name, said)


def _wrong(prop: dict[str, Any]) -> Any:
    """A value of the wrong JSON type for an argument's schema."""
    return "text" if prop.get("type") in ("object", "array") else {"wrong": "type"}


async def test_a_fault_on_the_servers_side_is_internal_says_only_which_request_failed_and_is_logged(
    local_settings: Settings,
    dispatcher: RecordingJobQueue,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("disk on fire at /secret/path")

    monkeypatch.setattr(InjectOps, "session_start", broken)
    caplog.set_level(logging.INFO)
    async with Client(create_server(local_settings, jobs=dispatcher)) as client:
        said = await refused(client, "memory_inject")
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("tideline_session_start")
    assert said == "internal error in memory_inject: the server's log has the details"
    assert prompt.value.code == -32603 and "secret" not in prompt.value.message
    tracebacks = [logging.Formatter().formatException(r.exc_info) for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 2 and all("disk on fire" in text for text in tracebacks)  # the operator sees why
