"""What a client can ask beyond tools: completions for the prompt's session and the resource's agent, and the
caller's own injection resource in resources/list; logging stays off the protocol."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp_helpers import RecordingJobQueue, call, serving
from mcp_types import PromptReference, ResourceTemplateReference
from test_http import ALICE_TOKEN, BOB_TOKEN, as_agent, token_settings  # noqa: F401 (a fixture)

from mcp_server.app import create_server
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio

PROMPT = PromptReference(type="ref/prompt", name="tideline_session_start")
TEMPLATE = ResourceTemplateReference(type="ref/resource", uri="tideline://inject/{agent}")


async def sessions(client: Client, typed: str) -> list[str]:
    return (await client.complete(PROMPT, {"name": "session_id", "value": typed})).completion.values


async def agents(client: Client, typed: str) -> list[str]:
    return (await client.complete(TEMPLATE, {"name": "agent", "value": typed})).completion.values


async def test_the_server_offers_completions_and_no_logging(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher)) as client:
        capabilities = client.server_capabilities
    assert capabilities.completions is not None
    assert capabilities.logging is None  # deprecated in MCP: logs go to stderr and files


async def test_the_prompts_session_id_completes_to_the_callers_latest_sessions_that_start_as_typed(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    bob = local_settings.model_copy(update={"agent": "bob"})
    async with Client(create_server(bob, jobs=dispatcher)) as client:
        await call(client, "context_record", role="user", content="bob's", session_id="work-bob")
    async with Client(create_server(local_settings, jobs=dispatcher)) as client:
        for session, at in (("work-1", "2026-05-01T10:00:00Z"), ("home-2", "2026-05-03T10:00:00Z")):
            await call(client, "context_record", role="user", content="hello", session_id=session, created_at=at)
        await call(client, "context_record", role="user", content="again", session_id="work-1", created_at="2026-05-02")
        await call(client, "memory_inject", session_id="work_3")  # shown a block now: the latest of all
        everything = await sessions(client, "")
        typed = await sessions(client, "work-")
        literal = await sessions(client, "work%")  # a LIKE wildcard in what was typed matches only itself
        none = await sessions(client, "zzz")
    assert everything == ["work_3", "home-2", "work-1"]
    assert typed == ["work-1"] and literal == [] and none == []


async def test_the_templates_agent_completes_to_the_caller_alone(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher)) as client:
        assert await agents(client, "") == ["alice"]
        assert await agents(client, "al") == ["alice"]
        assert await agents(client, "b") == []


async def test_completing_what_tideline_does_not_offer_gives_nothing(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher)) as client:
        await call(client, "context_record", role="user", content="hi", session_id="s1")
        for ref, argument in (
            (PromptReference(type="ref/prompt", name="test_prompt_with_arguments"), "session_id"),
            (PROMPT, "arg1"),
            (ResourceTemplateReference(type="ref/resource", uri="tideline://x/{agent}"), "agent"),
            (TEMPLATE, "who"),
        ):
            offered = await client.complete(ref, {"name": argument, "value": ""})
            assert offered.completion.values == [], (ref, argument)


async def test_resources_list_shows_the_callers_own_injection_block_and_it_reads(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher)) as client:
        await call(client, "memory_write_self_concept", kind="fact", content="I keep Alice's diary")
        listed = (await client.list_resources()).resources
        read = await client.read_resource(str(listed[0].uri))
        block = await call(client, "memory_inject")
    assert [(str(r.uri), r.mime_type) for r in listed] == [("tideline://inject/alice", "text/markdown")]
    assert read.contents[0].text == block["text"]  # type: ignore[union-attr]


async def test_over_http_each_token_lists_and_completes_only_its_own_agent(
    token_settings: Settings,  # noqa: F811 (the fixture)
    dispatcher: RecordingJobQueue,
) -> None:
    with serving(token_settings, dispatcher) as url:
        async with as_agent(url, ALICE_TOKEN) as alice, as_agent(url, BOB_TOKEN) as bob:
            await call(alice, "context_record", role="user", content="hi", session_id="alice-s")
            seen = {
                name: (
                    [str(r.uri) for r in (await client.list_resources()).resources],
                    await agents(client, ""),
                    await sessions(client, ""),
                )
                for name, client in (("alice", alice), ("bob", bob))
            }
    assert seen == {
        "alice": (["tideline://inject/alice"], ["alice"], ["alice-s"]),
        "bob": (["tideline://inject/bob"], ["bob"], []),
    }
