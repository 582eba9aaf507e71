"""Every tool through the real MCP protocol, in process, on a real SQLite file."""

from __future__ import annotations

import json
import re

import pytest
from mcp import Client
from mcp_helpers import RecordingJobQueue, call, refused

from mcp_server.app import create_server
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio

TOOLS = {
    "memory_write",
    "memory_recall",
    "memory_search",
    "memory_amend",
    "context_record",
    "context_search",
    "context_timeline",
    "memory_write_profile",
    "memory_read_profiles",
    "memory_write_self_concept",
    "memory_read_self_concept",
    "memory_write_thread",
    "memory_read_threads",
    "memory_write_snapshot",
    "memory_read_snapshot",
    "memory_status",
    "memory_graph",
    "memory_attention_heatmap",
    "memory_soft_clusters",
    "memory_topics",
    "memory_trigger",
    "memory_dream_log",
    "memory_dream_review",
    "memory_inject",
    "memory_prefetch",
}


async def test_the_server_lists_every_tool_with_annotations_a_description_and_an_output_schema(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.open_world_hint is False
        writes = tool.name.startswith(
            ("memory_write", "memory_amend", "context_record", "memory_trigger", "memory_dream_review")
        )
        assert (tool.annotations.read_only_hint is True) is not writes  # not given: the spec's default, false
        if writes:  # the spec's destructive hint means something only for a tool that writes
            assert tool.annotations.destructive_hint is False
        assert tool.output_schema is not None and tool.description and "Returns" in tool.description
    write_args = tools["memory_write"].input_schema["properties"]
    assert write_args["importance"]["minimum"] == 1 and write_args["importance"]["maximum"] == 5
    assert write_args["tags"]["type"] == "array" and write_args["gesture"]["maxLength"] == 2000
    assert tools["memory_write"].input_schema["required"] == ["gesture"]


# Every agent carries the tools list in its context for a whole session.
TOOLS_LIST_BYTES = 24 * 1024
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


async def test_the_tools_list_fits_in_24_kb_and_each_description_says_when_to_use_it_in_three_sentences(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        tools = (await client.list_tools()).tools
    listed = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    size = len(json.dumps(listed, ensure_ascii=False, separators=(",", ":")).encode())
    assert size <= TOOLS_LIST_BYTES, size
    for tool in tools:
        assert tool.description is not None and "\n" not in tool.description
        assert 1 <= len(SENTENCE_END.findall(tool.description)) <= 3, tool.description
        properties = tool.input_schema["properties"].values()
        assert not [prop for prop in properties if "title" in prop], tool.name  # the argument's name says it


async def test_a_result_conforms_to_the_outline_its_tool_lists(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        written = await client.call_tool("memory_write", {"gesture": "Swam 40 lengths on Thursday"})
        found = await client.call_tool("memory_search", {"query": "swam", "mode": "keyword"})
    for name, result in (("memory_write", written), ("memory_search", found)):
        outline = tools[name].output_schema
        assert outline is not None and result.structured_content is not None
        assert set(result.structured_content) <= set(outline["properties"]), name
        for field, value in result.structured_content.items():
            kinds = outline["properties"][field]["type"]
            allowed = {kinds} if isinstance(kinds, str) else set(kinds)
            if "number" in allowed:
                allowed.add("integer")  # JSON Schema's number holds the integers
            assert JSON_TYPES[type(value)] in allowed, (name, field, value)


JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object", list: "array"}
JSON_TYPES[type(None)] = "null"


async def test_a_written_memory_is_keyword_searchable_at_once_in_chinese_and_english(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        park = await call(
            client,
            "memory_write",
            gesture="傍晚和小林在公园散步，他说想换个服务器托管服务",
            tags=["散步", "小林"],
            importance=4,
            emotional=4,
        )
        deploy = await call(
            client, "memory_write", gesture="We shipped the release after a long night of debugging", tags=["release"]
        )
        for query, expected in (
            ("公园", park["id"]),
            ("服务", park["id"]),
            ("debugging", deploy["id"]),
            ("release night", deploy["id"]),
        ):
            found = await call(client, "memory_search", query=query)
            assert [hit["id"] for hit in found["hits"]][:1] == [expected], (query, found)
    assert park["embedding"] == "pending" and park["queued"] is True
    assert park["weight"] == pytest.approx((4 * 0.35 + 4 * 0.25 + 1 * 0.25 + 3 * 0.15) / 5)
    assert park["recurrence"] == 1
    assert dispatcher.embeds == ["alice", "alice"]


async def test_a_search_naming_a_date_says_so_and_puts_what_happened_then_first(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        spring = await call(client, "memory_write", gesture="去海边放风筝", occurred_at="2023-04-09T10:00:00Z")
        await call(client, "memory_write", gesture="去海边放风筝", occurred_at="2023-08-16T10:00:00Z")
        found = await call(client, "memory_search", query="2023年4月去海边放风筝")
    assert found["dates"] == ["April 2023"]
    assert found["hits"][0]["id"] == spring["id"] and found["hits"][0]["signals"]["time"] > 0
    assert "time" not in found["hits"][1]["signals"]


async def test_search_without_an_embedder_says_it_is_keyword_only(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        await call(client, "memory_write", gesture="notes about the garden")
        found = await call(client, "memory_search", query="garden", mode="dense")
    assert found["mode"] == "keyword" and "keyword-only" in found["degraded"]
    assert [hit["text"] for hit in found["hits"]] == ["notes about the garden"]


async def test_search_and_recall_hand_narrative_hits_to_attention_logging(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        written = await call(client, "memory_write", gesture="the lighthouse keeper waved")
        await call(client, "context_record", role="user", content="lighthouse at dawn", session_id="s1")
        await call(client, "memory_search", query="lighthouse")
        await call(client, "memory_recall")
        await call(client, "memory_search", query="nothing matches this at all")
    assert [(agent, [hit[0] for hit in hits], source) for agent, hits, source in dispatcher.attention] == [
        ("alice", [written["id"]], "search"),
        ("alice", [written["id"]], "recall"),
    ]


async def test_recall_filters_by_type_tags_and_time_and_orders_by_weight(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        old = await call(
            client,
            "memory_write",
            gesture="an old decision",
            narrative_type="decision",
            occurred_at="2024-01-05",
            importance=5,
            tags=["work"],
        )
        light = await call(
            client, "memory_write", gesture="a passing thought", narrative_type="reflection", importance=1
        )
        heavy = await call(
            client,
            "memory_write",
            gesture="a big insight",
            narrative_type="insight",
            importance=5,
            emotional=5,
            unresolved=5,
            tags=["work"],
        )
        recent = await call(client, "memory_recall")
        decisions = await call(client, "memory_recall", narrative_type="decision")
        tagged = await call(client, "memory_recall", tags=["work"], order="weight")
        before = await call(client, "memory_recall", until="2024-12-31")
        since = await call(client, "memory_recall", since="2025-01-01T00:00:00Z", limit=1)
    assert [n["id"] for n in recent["narratives"]] == [heavy["id"], light["id"], old["id"]]
    assert [n["id"] for n in decisions["narratives"]] == [old["id"]]
    assert [n["id"] for n in tagged["narratives"]] == [heavy["id"], old["id"]]
    assert [n["id"] for n in before["narratives"]] == [old["id"]]
    assert since["count"] == 1 and since["narratives"][0]["id"] == heavy["id"]
    assert recent["narratives"][0]["tags"] == ["work"] and recent["narratives"][0]["embedding_state"] == "pending"


async def test_an_amendment_is_appended_and_the_memory_itself_is_unchanged(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        written = await call(client, "memory_write", gesture="I said the meeting was on Monday")
        amended = await call(client, "memory_amend", narrative_id=written["id"], note="It was Tuesday.")
        missing = await refused(client, "memory_amend", narrative_id=written["id"] + 100, note="?")
        (memory,) = (await call(client, "memory_recall"))["narratives"]
    assert amended["narrative_id"] == written["id"]
    assert memory["gesture"] == "I said the meeting was on Monday" and memory["amendments"] == ["It was Tuesday."]
    assert "not found" in missing and str(written["id"] + 100) in missing


async def test_turns_are_recorded_searched_and_read_back_in_order(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        first = await call(
            client,
            "context_record",
            role="user",
            content="Shall we meet by the river?",
            session_id="a",
            created_at="2026-01-01T10:00:00Z",
            metadata={"channel": "chat"},
        )
        reply = await call(
            client,
            "context_record",
            role="assistant",
            content="Yes, at noon.",
            session_id="a",
            created_at="2026-01-01T10:01:00Z",
        )
        await call(
            client,
            "context_record",
            role="user",
            content='{"tool": "calendar", "ok": true}',
            session_id="b",
            speaker="calendar-bot",
            created_at="2026-01-02T09:00:00Z",
        )
        written = await call(client, "memory_write", gesture="agreed to meet by the river", source_links=[first["id"]])
        session = await call(client, "context_timeline", session_id="a")
        latest = await call(client, "context_timeline", limit=2)
        found = await call(client, "context_search", query="river")
        (memory,) = (await call(client, "memory_recall"))["narratives"]
    assert [t["content"] for t in session["turns"]] == ["Shall we meet by the river?", "Yes, at noon."]
    assert session["turns"][0]["metadata"] == {"channel": "chat"} and session["session_id"] == "a"
    assert [t["session_id"] for t in latest["turns"]] == ["a", "b"] and latest["session_id"] is None
    assert latest["turns"][1]["content"] == '{"tool": "calendar", "ok": true}'
    # The reply comes second: it matches through its context (the question it answers), not its own words.
    assert [(h["kind"], h["id"]) for h in found["hits"]] == [("context", first["id"]), ("context", reply["id"])]
    assert "kw" not in found["hits"][1]["signals"] and "kw_ctx" in found["hits"][1]["signals"]
    assert memory["id"] == written["id"] and memory["source_links"] == [first["id"]]


async def test_profiles_and_self_concept_keep_every_earlier_version(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        first = await call(client, "memory_write_profile", entity="小林", kind="impression", content="quiet, careful")
        second = await call(
            client, "memory_write_profile", entity="小林", kind="impression", content="quiet, funny", pinned=True
        )
        await call(client, "memory_write_profile", entity="Bob", kind="contact", content="bob@example.org")
        profiles = await call(client, "memory_read_profiles", entity="小林", with_history=True)
        everyone = await call(client, "memory_read_profiles", kind="contact")
        await call(client, "memory_write_self_concept", kind="terrain", content="I drift toward questions")
        self_concept = await call(client, "memory_write_self_concept", kind="terrain", content="I like open questions")
        concept = await call(client, "memory_read_self_concept", with_history=True)
    assert (first["version"], second["version"], first["id"]) == (1, 2, second["id"])
    (profile,) = profiles["profiles"]
    assert profile["content"] == "quiet, funny" and profile["pinned"] is True
    assert [v["content"] for v in profile["history"]] == ["quiet, careful"]
    assert [p["entity"] for p in everyone["profiles"]] == ["Bob"]
    assert self_concept["version"] == 2 and concept["entries"][0]["history"][0]["content"] == "I drift toward questions"


async def test_threads_open_update_and_filter_and_snapshots_come_back_newest_first(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        opened = await call(client, "memory_write_thread", title="Why do tides lag the moon?", priority=4)
        await call(client, "memory_write_thread", title="Learn the ukulele", priority=2)
        updated = await call(
            client,
            "memory_write_thread",
            thread_id=opened["id"],
            title="Why do tides lag the moon?",
            content="friction and inertia",
            status="resolved",
        )
        open_threads = await call(client, "memory_read_threads", status="open")
        unknown = await refused(client, "memory_write_thread", thread_id=999, title="nope")
        await call(client, "memory_write_snapshot", content="tired but pleased", mood="calm")
        await call(client, "memory_write_snapshot", content="curious about tides", mood="bright")
        latest = await call(client, "memory_read_snapshot")
        both = await call(client, "memory_read_snapshot", limit=5)
    assert opened["created"] is True and updated == {"id": opened["id"], "status": "resolved", "created": False}
    assert [t["title"] for t in open_threads["threads"]] == ["Learn the ukulele"]
    assert "not found" in unknown and "999" in unknown
    assert [s["content"] for s in latest["snapshots"]] == ["curious about tides"]
    assert [s["mood"] for s in both["snapshots"]] == ["bright", "calm"]


async def test_status_counts_the_callers_rows_and_reports_the_pipeline(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        await call(client, "memory_write", gesture="one")
        await call(client, "memory_write", gesture="two")
        await call(client, "context_record", role="user", content="hello")
        await call(client, "memory_write_snapshot", content="fine")
        status = await call(client, "memory_status")
    assert status["agent"] == "alice" and status["embedder"] == "none"
    assert status["counts"]["narratives"] == 2 and status["counts"]["context_turns"] == 1
    assert status["counts"]["snapshots"] == 1 and status["embeddings_pending"] == 3
    assert status["broker_reachable"] is True and status["queue_depths"] == {"ingest": 0, "dream": 0}
    assert status["last_task_errors"] == []
