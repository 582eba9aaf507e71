"""Two agents on one database never see or touch each other's rows, whichever tool they use."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp_helpers import RecordingJobQueue, call, refused

from mcp_server.app import create_server
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio


async def test_an_agent_sees_none_of_another_agents_memories_turns_or_profiles(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    alice_server = create_server(local_settings, jobs=dispatcher)
    bob_server = create_server(local_settings.model_copy(update={"agent": "bob"}), jobs=dispatcher)
    async with Client(alice_server, raise_exceptions=True) as alice, Client(bob_server, raise_exceptions=True) as bob:
        turn = await call(
            alice, "context_record", role="user", content="alice's secret: the key is under the 花盆", session_id="s1"
        )
        memory = await call(
            alice,
            "memory_write",
            gesture="alice hid the key under the 花盆",
            tags=["secret"],
            source_links=[turn["id"]],
        )
        await call(alice, "memory_write_profile", entity="Carol", kind="fact", content="Carol is alice's sister")
        await call(alice, "memory_write_self_concept", kind="fact", content="I am alice")
        await call(alice, "memory_write_thread", title="where did I put the key?")
        await call(alice, "memory_write_snapshot", content="alice is fine")

        bob_sees = {
            "search": await call(bob, "memory_search", query="secret key 花盆"),
            "context": await call(bob, "context_search", query="secret"),
            "recall": await call(bob, "memory_recall", tags=["secret"]),
            "timeline": await call(bob, "context_timeline", session_id="s1"),
            "recent": await call(bob, "context_timeline"),
            "profiles": await call(bob, "memory_read_profiles"),
            "self": await call(bob, "memory_read_self_concept"),
            "threads": await call(bob, "memory_read_threads"),
            "snapshots": await call(bob, "memory_read_snapshot"),
        }
        amend = await refused(bob, "memory_amend", narrative_id=memory["id"], note="bob was here")
        link = await refused(bob, "memory_write", gesture="bob links alice's turn", source_links=[turn["id"]])
        bob_status = await call(bob, "memory_status")
        bob_writes = await call(bob, "memory_write", gesture="bob's own memory", tags=["secret"])
        alice_still = await call(alice, "memory_recall")

    assert bob_sees["search"]["hits"] == [] and bob_sees["context"]["hits"] == []
    assert all(result["count"] == 0 for name, result in bob_sees.items() if "count" in result), bob_sees
    assert "not found" in amend and "source_links" in link
    assert bob_status["agent"] == "bob" and bob_status["counts"]["narratives"] == 0
    # Recurrence counts only the agent's own tags: alice's "secret" memory does not lift bob's.
    assert bob_writes["recurrence"] == 1
    assert [n["gesture"] for n in alice_still["narratives"]] == ["alice hid the key under the 花盆"]
    assert alice_still["narratives"][0]["amendments"] == []
