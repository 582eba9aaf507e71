"""An agent runtime pulls its injected context: the session-start block and each turn's, as tools, a prompt and a
resource; a session is not shown the same memory twice, whichever server process it talks to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import RecordingJobQueue, call, refused
from test_stdio import server_env, tideline_command

from mcp_server.app import create_server
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio


async def seed(client: Client) -> list[int]:
    await call(client, "memory_write_self_concept", kind="fact", content="I am Alice's helper and I keep her diary")
    await call(client, "memory_write_thread", title="Find a piano teacher", status="open", priority=4)
    ids = []
    for n in range(12):
        written = await call(
            client,
            "memory_write",
            gesture=f"We talked about the piano recital, rehearsal {n}. The hall was cold.",
            importance=5,
            emotional=5,
            unresolved=5,
            tags=[f"recital-{n}"],
        )
        ids.append(written["id"])
    return ids


async def test_the_session_start_block_comes_with_its_parts_and_why_each_was_chosen(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        await seed(client)
        block = await call(client, "memory_inject", session_id="s1")
        again = await call(client, "memory_inject", session_id="s2")
    assert block["text"] == again["text"] and block["version"] == again["version"] != ""
    assert block["text"].startswith(f"# Tideline memory · v{block['version']}")
    assert block["tokens"] <= block["budget"] == 2000
    tiers = [item["tier"] for item in block["items"]]
    assert tiers[:2] == ["T0", "T0"] and "T2" in tiers
    for item in block["items"]:
        assert item["reason"] and item["tokens"] > 0 and item["text"] in block["text"]
    assert any("no SOUL file" in note for note in block["notes"])


async def test_each_turns_block_recalls_what_was_said_and_does_not_repeat_itself(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        await seed(client)
        first = await call(client, "memory_prefetch", query="piano recital", session_id="s1", budget=200)
        second = await call(
            client,
            "memory_prefetch",
            recent_turns=[{"speaker": "Alice", "text": "How did the piano recital rehearsal go?"}],
            session_id="s1",
            budget=200,
        )
    shown = [{item["id"] for item in block["items"]} for block in (first, second)]
    assert shown[0] and shown[1] and not shown[0] & shown[1]
    assert {item["tier"] for item in first["items"]} == {"T1"} and first["tokens"] <= 200
    assert first["text"].startswith("# Tideline recall")
    assert [source for _agent, _hits, source in dispatcher.attention] == ["t1", "t1"]


async def test_a_block_request_outside_the_rules_is_refused_naming_the_argument(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        too_small = await refused(client, "memory_inject", budget=50)
        nothing_to_recall = await refused(client, "memory_prefetch", session_id="s1")
        long_session = await refused(client, "memory_prefetch", query="piano", session_id="s" * 300)
    assert "budget" in too_small and "100" in too_small
    assert "query" in nothing_to_recall and "recent lines of the conversation" in nothing_to_recall
    assert "session_id" in long_session and "256" in long_session


async def test_clients_that_pull_context_get_the_block_as_a_prompt_and_as_a_resource_of_their_own_agent_only(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        await seed(client)
        block = await call(client, "memory_inject")
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        prompt = await client.get_prompt("tideline_session_start", {"session_id": "s1"})
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        own = await client.read_resource("tideline://inject/alice")
        with pytest.raises(Exception, match="another agent's memory") as foreign:
            await client.read_resource("tideline://inject/bob")
    assert "tideline_session_start" in prompts and "tideline://inject/{agent}" in templates
    assert prompt.messages[0].content.text == block["text"]  # type: ignore[union-attr]
    assert own.contents[0].text == block["text"]  # type: ignore[union-attr]
    assert "bob" in str(foreign.value)


async def test_what_a_session_was_shown_holds_across_two_server_processes_and_a_restart(
    settings: Settings, tmp_path: Path
) -> None:
    command, prefix = tideline_command()
    params = StdioServerParameters(command=command, args=[*prefix, "serve"], env=server_env(settings))

    async def prefetch(client: Client) -> set[int]:
        block: dict[str, Any] = await call(
            client, "memory_prefetch", query="piano recital", session_id="s1", budget=150
        )
        return {item["id"] for item in block["items"]}

    async with (
        Client(params, mode="legacy", raise_exceptions=True, read_timeout_seconds=60) as one,
        Client(params, mode="legacy", raise_exceptions=True, read_timeout_seconds=60) as two,
    ):
        written = set(await seed(one))
        by_one = await prefetch(one)
        by_two = await prefetch(two)
    async with Client(params, mode="legacy", raise_exceptions=True, read_timeout_seconds=60) as restarted:
        after_restart = await prefetch(restarted)
    assert by_one and by_two and after_restart
    assert not by_one & by_two and not (by_one | by_two) & after_restart
    assert by_one | by_two | after_restart <= written
