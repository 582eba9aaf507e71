"""Bad input gets one clear error naming the field and the rule, and nothing is stored; queries are only text."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp_helpers import RecordingJobQueue, call, refused, row_count

from mcp_server.app import create_server
from tideline_core.settings import Settings

pytestmark = pytest.mark.anyio

GOOD = {"gesture": "a good memory"}

BAD_WRITES: list[tuple[str, dict[str, Any], str, str]] = [
    # (case, arguments, the field the error must name, words of the rule it must state)
    ("score above 5", {**GOOD, "importance": 6}, "importance", "less than or equal to 5"),
    ("score below 1", {**GOOD, "emotional": 0}, "emotional", "greater than or equal to 1"),
    ("score as a word", {**GOOD, "unresolved": "high"}, "unresolved", "valid integer"),
    ("score as a fraction", {**GOOD, "importance": 2.5}, "importance", "valid integer"),
    ("empty gesture", {"gesture": ""}, "gesture", "must not be empty or only whitespace"),
    ("blank gesture", {"gesture": "   "}, "gesture", "must not be empty or only whitespace"),
    ("unknown narrative type", {**GOOD, "narrative_type": "dreamy"}, "narrative_type", "'event'"),
    ("over-size gesture", {"gesture": "長" * 2001}, "gesture", "at most 2000 characters"),
    ("over-size context", {**GOOD, "context": "x" * 20_001}, "context", "at most 20000 characters"),
    ("too many tags", {**GOOD, "tags": [f"t{i}" for i in range(33)]}, "tags", "at most 32 items"),
    ("malformed date", {**GOOD, "occurred_at": "last tuesday"}, "occurred_at", "ISO-8601"),
    ("impossible date", {**GOOD, "occurred_at": "2026-02-30"}, "occurred_at", "ISO-8601"),
    ("tags as a comma string", {**GOOD, "tags": "a,b"}, "tags", "valid list"),
    ("tags as a number", {**GOOD, "tags": 7}, "tags", "valid list"),
    ("a tag that is not text", {**GOOD, "tags": ["ok", 3]}, "tags", "item 1: Input should be a valid string"),
    ("source link to a turn that does not exist", {**GOOD, "source_links": [12345]}, "source_links", "do not exist"),
]


@pytest.mark.parametrize(
    ("arguments", "field", "rule"), [case[1:] for case in BAD_WRITES], ids=[case[0] for case in BAD_WRITES]
)
async def test_a_bad_memory_write_names_the_field_and_the_rule_and_stores_nothing(
    local_settings: Settings, dispatcher: RecordingJobQueue, arguments: dict[str, Any], field: str, rule: str
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        error = await refused(client, "memory_write", **arguments)
    assert f"{field}:" in error and rule in error, error
    assert "validation error for" not in error  # our message, not a pydantic dump
    assert row_count(local_settings, "narratives") == 0 and row_count(local_settings, "narrative_tags") == 0
    assert dispatcher.embeds == []


BAD_OTHERS: list[tuple[str, str, dict[str, Any], str, str, str]] = [
    # (case, tool, arguments, field, rule, the table that must stay empty)
    ("unknown role", "context_record", {"role": "narrator", "content": "hi"}, "role", "'user'", "context_turns"),
    (
        "empty turn",
        "context_record",
        {"role": "user", "content": ""},
        "content",
        "must not be empty or only whitespace",
        "context_turns",
    ),
    (
        "over-size turn",
        "context_record",
        {"role": "user", "content": "x" * 100_001},
        "content",
        "at most 100000",
        "context_turns",
    ),
    (
        "metadata not an object",
        "context_record",
        {"role": "user", "content": "hi", "metadata": ["a"]},
        "metadata",
        "valid dictionary",
        "context_turns",
    ),
    (
        "over-size metadata",
        "context_record",
        {"role": "user", "content": "hi", "metadata": {"k": "v" * 17_000}},
        "metadata",
        "at most 16384 bytes",
        "context_turns",
    ),
    (
        "malformed turn time",
        "context_record",
        {"role": "user", "content": "hi", "created_at": "noon"},
        "created_at",
        "ISO-8601",
        "context_turns",
    ),
    (
        "unknown profile kind",
        "memory_write_profile",
        {"entity": "Bob", "kind": "gossip", "content": "x"},
        "kind",
        "'fact'",
        "profiles",
    ),
    (
        "pinned as a word",
        "memory_write_profile",
        {"entity": "Bob", "kind": "fact", "content": "x", "pinned": "yes"},
        "pinned",
        "valid boolean",
        "profiles",
    ),
    (
        "unknown self-concept kind",
        "memory_write_self_concept",
        {"kind": "mood", "content": "x"},
        "kind",
        "'terrain'",
        "self_concept",
    ),
    (
        "thread priority above 5",
        "memory_write_thread",
        {"title": "t", "priority": 9},
        "priority",
        "less than or equal to 5",
        "threads",
    ),
    ("unknown thread status", "memory_write_thread", {"title": "t", "status": "paused"}, "status", "'open'", "threads"),
    (
        "empty snapshot",
        "memory_write_snapshot",
        {"content": ""},
        "content",
        "must not be empty or only whitespace",
        "snapshots",
    ),
    (
        "amendment to id 0",
        "memory_amend",
        {"narrative_id": 0, "note": "x"},
        "narrative_id",
        "greater than or equal to 1",
        "amendments",
    ),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "rule", "table"),
    [case[1:] for case in BAD_OTHERS],
    ids=[case[0] for case in BAD_OTHERS],
)
async def test_every_other_write_refuses_bad_input_the_same_way(
    local_settings: Settings,
    dispatcher: RecordingJobQueue,
    tool: str,
    arguments: dict[str, Any],
    field: str,
    rule: str,
    table: str,
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        error = await refused(client, tool, **arguments)
    assert f"{field}:" in error and rule in error, error
    assert row_count(local_settings, table) == 0


BAD_READS: list[tuple[str, str, dict[str, Any], str, str]] = [
    ("empty query", "memory_search", {"query": ""}, "query", "must not be empty or only whitespace"),
    ("unknown search mode", "memory_search", {"query": "x", "mode": "fuzzy"}, "mode", "'hybrid'"),
    ("unknown search kinds", "memory_search", {"query": "x", "kinds": "emails"}, "kinds", "'narratives'"),
    ("search limit too large", "memory_search", {"query": "x", "limit": 1000}, "limit", "less than or equal to 100"),
    ("malformed since", "memory_search", {"query": "x", "since": "2026-13-01"}, "since", "ISO-8601"),
    ("recall order unknown", "memory_recall", {"order": "random"}, "order", "'recent'"),
    ("recall tags not a list", "memory_recall", {"tags": "work"}, "tags", "valid list"),
    ("timeline limit zero", "context_timeline", {"limit": 0}, "limit", "greater than or equal to 1"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "rule"), [case[1:] for case in BAD_READS], ids=[case[0] for case in BAD_READS]
)
async def test_reads_refuse_bad_arguments_with_the_field_named(
    local_settings: Settings, dispatcher: RecordingJobQueue, tool: str, arguments: dict[str, Any], field: str, rule: str
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        error = await refused(client, tool, **arguments)
    assert f"{field}:" in error and rule in error, error


FTS_TEXT = [
    ('say "hello" twice', '"hello"'),
    ("wild*card", "wild*"),
    ("cats AND dogs", "AND"),
    ("NEAR(a b)", "NEAR("),
    ("100% sure", "100%"),
    ("snake_case_name", "snake_case_name"),
    ("a_b%c", "_b%"),
    ("OR", "OR"),
    ("-minus ^caret", "^caret"),
]


async def test_fts_syntax_in_a_query_is_searched_as_plain_text(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    texts = [text for text, _ in FTS_TEXT]
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        ids = {text: (await call(client, "memory_write", gesture=text))["id"] for text in texts}
        await call(client, "memory_write", gesture="nothing special here")
        for text, query in FTS_TEXT:
            found = await call(client, "memory_search", query=query, mode="keyword")
            assert ids[text] in [hit["id"] for hit in found["hits"]], (query, found)
        for query in ('"', "*", "NEAR(", "%", "_", "AND OR NOT", '"unbalanced'):
            await call(client, "memory_search", query=query)  # no error, whatever comes back
        # `%` and `_` stay literal: a query of only "_" does not match every row through LIKE.
        underscore = await call(client, "memory_search", query="_", mode="keyword")
    assert {hit["id"] for hit in underscore["hits"]} <= {ids["snake_case_name"], ids["a_b%c"]}


STORED = ("narratives", "context_turns", "profiles", "self_concept", "threads", "snapshots", "amendments")


def stored_rows(settings: Settings) -> dict[str, int]:
    return {table: row_count(settings, table) for table in STORED}


async def test_every_tool_refuses_an_argument_it_does_not_have_and_a_null_naming_the_argument(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        tools = (await client.list_tools()).tools
        assert len(tools) >= 20
        for tool in tools:
            error = await refused(client, tool.name, importnace=5)
            assert f"invalid input: importnace: is not an argument of {tool.name}" in error, error
            required = set(tool.input_schema.get("required", []))
            for name in tool.input_schema.get("properties", {}):
                error = await refused(client, tool.name, **{name: None})
                assert f"invalid input: {name}: must not be null" in error, error
                # A required argument has no default to fall back on, and the message does not offer one.
                assert ("it is required" in error) == (name in required) != ("default" in error), error
        # A misspelling next to good arguments stores nothing either.
        assert "limt" in await refused(client, "memory_recall", limt=1)
        assert "importnace" in await refused(client, "memory_write", gesture="kept?", importnace=5)
    assert set(stored_rows(local_settings).values()) == {0} and dispatcher.embeds == []


async def test_no_published_argument_schema_admits_null(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    import json

    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        for tool in (await client.list_tools()).tools:
            assert "null" not in json.dumps(tool.input_schema), tool.name


OUT_OF_RANGE: list[tuple[str, str, dict[str, Any], str, str]] = [
    # (case, tool, arguments, field, words of the rule)
    (
        "a date past year 9999 in UTC",
        "memory_write",
        {**GOOD, "occurred_at": "9999-12-31T23:59:59-14:00"},
        "occurred_at",
        "between years 1 and 9999",
    ),
    (
        "a date before year 1 in UTC",
        "memory_write",
        {**GOOD, "occurred_at": "0001-01-01T00:00:00+14:00"},
        "occurred_at",
        "between years 1 and 9999",
    ),
    (
        "a turn time past year 9999",
        "context_record",
        {"role": "user", "content": "hi", "created_at": "9999-12-31T23:59:59-14:00"},
        "created_at",
        "between years 1 and 9999",
    ),
    (
        "a search bound past year 9999",
        "memory_search",
        {"query": "x", "since": "9999-12-31T23:59:59-14:00"},
        "since",
        "between years 1 and 9999",
    ),
    (
        "a timeline bound before year 1",
        "context_timeline",
        {"until": "0001-01-01T00:00:00+14:00"},
        "until",
        "between years 1 and 9999",
    ),
    ("an id of 2^63", "memory_amend", {"narrative_id": 2**63, "note": "x"}, "narrative_id", "less than or equal to"),
    (
        "an id of 2^31",
        "memory_write_thread",
        {"thread_id": 2**31, "status": "resolved"},
        "thread_id",
        "less than or equal to 2147483647",
    ),
    (
        "a source link of 2^31",
        "memory_write",
        {**GOOD, "source_links": [2**31]},
        "source_links",
        "less than or equal to 2147483647",
    ),
    ("NUL in a gesture", "memory_write", {"gesture": "a\x00b"}, "gesture", "NUL"),
    ("NUL in a tag", "memory_write", {**GOOD, "tags": ["a\x00"]}, "tags", "NUL"),
    ("NUL in a turn", "context_record", {"role": "user", "content": "a\x00b"}, "content", "NUL"),
    (
        "NUL in turn metadata",
        "context_record",
        {"role": "user", "content": "hi", "metadata": {"k": ["\x00"]}},
        "metadata",
        "NUL",
    ),
    (
        "NUL in a profile",
        "memory_write_profile",
        {"entity": "Bob\x00", "kind": "fact", "content": "x"},
        "entity",
        "NUL",
    ),
    ("NUL in a query", "memory_search", {"query": "a\x00"}, "query", "NUL"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "rule"), [case[1:] for case in OUT_OF_RANGE], ids=[case[0] for case in OUT_OF_RANGE]
)
async def test_out_of_range_values_are_refused_up_front_the_same_on_every_backend(
    make_settings: Any, tool: str, arguments: dict[str, Any], field: str, rule: str
) -> None:
    # `make_settings` gives PostgreSQL when the suite runs on it: what SQLite would store and PostgreSQL
    # would reject (or overflow) is refused before either sees it.
    settings = make_settings(embedder="none")
    async with Client(create_server(settings, jobs=RecordingJobQueue()), raise_exceptions=True) as client:
        error = await refused(client, tool, **arguments)
    assert f"invalid input: {field}:" in error and rule in error, error
    assert set(stored_rows(settings).values()) == {0}


async def test_errors_name_the_argument_the_caller_used_once(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    lines = [{"speaker": "Ann", "text": f"line {i}"} for i in range(21)]
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        too_many = await refused(client, "memory_search", recent_turns=lines)
        tags = await refused(client, "memory_write", gesture="g", tags=[1, 2])
        missing = await refused(client, "memory_write", context="no gesture")
        wrong_type = await refused(client, "memory_write", gesture=12)
    assert "invalid input: recent_turns: List should have at most 20 items" in too_many and "query" not in too_many
    assert "invalid input: tags: item 0: Input should be a valid string; item 1: " in tags
    assert "tags.0" not in tags
    assert missing.endswith("invalid input: gesture: is required")
    assert "invalid input: gesture: must be a string" in wrong_type
    for error in (too_many, tags, missing, wrong_type):
        assert "validation error" not in error and "https://errors.pydantic.dev" not in error


async def test_an_update_keeps_what_it_was_not_given(local_settings: Settings, dispatcher: RecordingJobQueue) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        opened = await call(
            client, "memory_write_thread", title="Why do tides lag the moon?", content="notes", priority=5
        )
        closed = await call(client, "memory_write_thread", thread_id=opened["id"], status="resolved")
        assert closed == {"id": opened["id"], "status": "resolved", "created": False}
        (thread,) = (await call(client, "memory_read_threads"))["threads"]
        assert (thread["title"], thread["content"], thread["priority"]) == ("Why do tides lag the moon?", "notes", 5)
        assert "title: is required to open a thread" in await refused(client, "memory_write_thread", priority=2)

        await call(client, "memory_write_profile", entity="Bob", kind="fact", content="likes tea", pinned=True)
        await call(client, "memory_write_profile", entity="Bob", kind="fact", content="likes green tea")
        (bob,) = (await call(client, "memory_read_profiles", entity="Bob"))["profiles"]
        assert (bob["content"], bob["pinned"], bob["version"]) == ("likes green tea", True, 2)
        await call(client, "memory_write_profile", entity="Bob", kind="fact", content="tea", pinned=False)
        (bob,) = (await call(client, "memory_read_profiles", entity="Bob"))["profiles"]
        assert bob["pinned"] is False
