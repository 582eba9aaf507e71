"""A write retried with its idempotency key returns the first result and stores nothing, on every write tool."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp_helpers import RecordingJobQueue, call, refused, row_count

from mcp_server.app import create_server
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio

# Every tool that adds a row or a version, with good arguments and where its write lands (a replaced
# profile or self-concept entry moves its old text to history: the two tables count versions).
# `narrative_id` 1 is the memory each test writes first (amendments need one).
WRITES: dict[str, tuple[dict[str, Any], str]] = {
    "memory_write": ({"gesture": "the kettle whistled during the call", "tags": ["home"]}, "narratives"),
    "context_record": ({"role": "user", "content": "did you hear the kettle?", "session_id": "s1"}, "context_turns"),
    "memory_amend": ({"narrative_id": 1, "note": "it was the neighbour's kettle"}, "amendments"),
    "memory_write_profile": (
        {"entity": "Bob", "kind": "fact", "content": "owns a loud kettle"},
        "profiles+profile_history",
    ),
    "memory_write_self_concept": (
        {"kind": "terrain", "content": "I notice small sounds"},
        "self_concept+self_concept_history",
    ),
    "memory_write_thread": ({"title": "whose kettle was it?"}, "threads"),
    "memory_write_snapshot": ({"content": "listening", "mood": "curious"}, "snapshots"),
}


def rows(settings: Settings) -> dict[str, int]:
    return {tables: sum(row_count(settings, t) for t in tables.split("+")) for _args, tables in WRITES.values()}


async def test_every_write_tool_takes_an_idempotency_key_and_every_other_tool_does_not(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        tools = (await client.list_tools()).tools
    keyed = {t.name for t in tools if "idempotency_key" in t.input_schema.get("properties", {})}
    # A trigger starts a task; a review acts on one run once (approving it again is refused, saying it was).
    unkeyed = {"memory_trigger", "memory_dream_review"}
    writes = {t.name for t in tools if t.annotations and not t.annotations.read_only_hint and t.name not in unkeyed}
    assert keyed == writes == set(WRITES), "a new write tool needs an idempotency key (and a case above)"


@pytest.mark.parametrize("tool", sorted(WRITES))
async def test_the_same_key_again_returns_the_first_result_and_stores_nothing(
    local_settings: Settings, dispatcher: RecordingJobQueue, tool: str
) -> None:
    arguments, table = WRITES[tool]
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        await call(client, "memory_write", gesture="the first memory")
        before = rows(local_settings)
        first = await call(client, tool, **arguments, idempotency_key="retry-7f3a")
        after_first = rows(local_settings)
        again = await call(client, tool, **arguments, idempotency_key="retry-7f3a")
        assert again == first
        assert rows(local_settings) == after_first, "the retry stored nothing"
        assert after_first[table] == before[table] + 1

        # Without a key (or with another one) the same arguments are a new write.
        fresh = await call(client, tool, **arguments, idempotency_key="retry-8b1c")
    assert fresh != first
    assert rows(local_settings)[table] == before[table] + 2


async def test_a_key_reused_with_other_arguments_or_on_another_tool_is_refused_and_stores_nothing(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        await call(client, "memory_write", gesture="the kettle whistled", idempotency_key="k-1")
        before = rows(local_settings)
        other_text = await refused(client, "memory_write", gesture="a different memory", idempotency_key="k-1")
        other_tool = await refused(client, "memory_write_snapshot", content="listening", idempotency_key="k-1")
    assert "invalid input: idempotency_key: was first used with other arguments" in other_text
    assert "invalid input: idempotency_key: was first used to write a narrative; use a new key" in other_tool
    assert rows(local_settings) == before


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        ("", "must not be empty or only whitespace"),
        ("has space", "visible ASCII"),
        ("k" * 129, "at most 128"),
        ("ключ", "ASCII"),
    ],
)
async def test_a_malformed_key_is_refused_naming_it(
    local_settings: Settings, dispatcher: RecordingJobQueue, key: str, rule: str
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        error = await refused(client, "memory_write", gesture="kept?", idempotency_key=key)
    assert "invalid input: idempotency_key:" in error and rule in error, error
    assert row_count(local_settings, "narratives") == 0
