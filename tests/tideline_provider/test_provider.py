"""A runtime's plugin hooks through the provider, with a real worker embedding what they store."""

from __future__ import annotations

from typing import Any

import pytest
from provider_helpers import all_embedded, turns_of
from sqlalchemy import select

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.errors import InvalidInput
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.schema import AttentionHit
from tideline_provider import TidelineProvider


def test_a_runtimes_hooks_store_each_message_once_and_recall_it_by_meaning_once_a_worker_embedded_it(
    settings: Settings, database: Database, celery_worker: Any, wait_until: Any
) -> None:
    user, reply = "My sister Lena is getting married in June in Porto", "Congratulations! June in Porto sounds lovely."
    later = "Can you remind me to book flights for the wedding?"
    with TidelineProvider(agent="alice", settings=settings, session_id="s1") as memory:
        memory.sync_turn(user, reply)
        memory.sync_turn(user, reply)  # a runtime that retries a hook
        wait_until(lambda: all_embedded(database, "alice"), timeout=60, message="the worker embedded the turns")
        recalled = memory.prefetch("a family celebration abroad this summer")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": user},
            {"role": "assistant", "content": [{"type": "text", "text": reply}]},
            {"role": "user", "content": later},
        ]
        memory.on_pre_compress(messages)
        memory.on_session_end([*messages, {"role": "assistant", "content": "Done: flights to Porto on your list."}])
        start = memory.system_prompt_block(session_id="s2")
    assert "Lena is getting married" in recalled, "found by meaning: no word of the query is in it"
    assert turns_of(database, "alice") == [
        ("s1", "user", user),
        ("s1", "assistant", reply),
        ("s1", "user", later),
        ("s1", "assistant", "Done: flights to Porto on your list."),
    ]
    assert "## Where the last conversation left off (session s1" in start
    assert start.index(later) < start.index("Done: flights to Porto"), "the bridge reads in the order spoken"


def test_before_a_compression_the_heavy_memories_the_conversation_touches_are_handed_back(
    settings: Settings, database: Database, celery_worker: Any, wait_until: Any
) -> None:
    with TidelineProvider(agent="alice", settings=settings, session_id="s1") as memory:
        heavy = memory.service.write_narrative(
            "alice",
            NarrativeIn(
                gesture="Alice promised her father to visit him in Lisbon before Christmas",
                importance=5,
                emotional=5,
                unresolved=5,
            ),
        )
        light = memory.service.write_narrative(
            "alice", NarrativeIn(gesture="Alice checked train times to Lisbon", importance=1, emotional=1, unresolved=1)
        )
        wait_until(lambda: all_embedded(database, "alice"), timeout=60, message="the worker embedded the memories")
        rescued = memory.on_pre_compress(
            [
                {"role": "user", "content": "I am planning the trip to see my dad in Lisbon"},
                {"role": "assistant", "content": "Before Christmas, as you promised him?"},
            ]
        )
    assert heavy.weight > 0.6 >= light.weight
    assert "visit him in Lisbon before Christmas" in rescued and "train times" not in rescued
    assert len(turns_of(database, "alice")) == 2


def test_each_turns_recall_is_logged_by_the_worker_with_its_real_similarity(
    settings: Settings, database: Database, celery_worker: Any, wait_until: Any
) -> None:
    with TidelineProvider(agent="alice", settings=settings) as memory:
        kite = memory.service.write_narrative("alice", NarrativeIn(gesture="We flew a red kite on the windy beach"))
        memory.service.record_turns("alice", [ContextTurnIn(role="user", content="The kite string snapped")])
        wait_until(lambda: all_embedded(database, "alice"), timeout=60, message="the worker embedded the rows")
        memory.prefetch("kites at the seaside")

        def logged() -> list[tuple[int, float | None, str]]:
            with database.read() as conn:
                rows = conn.execute(select(AttentionHit.narrative_id, AttentionHit.similarity, AttentionHit.source))
                return [(n, s, src) for n, s, src in rows]

        wait_until(lambda: logged(), timeout=30, message="the ingest worker logged the hit")
    ((narrative, similarity, source),) = logged()
    assert narrative == kite.id and source == "t1"
    assert similarity is not None and 0.0 < similarity < 1.0


def test_two_agents_providers_never_see_each_others_memories(
    settings: Settings, database: Database, celery_worker: Any, wait_until: Any
) -> None:
    with (
        TidelineProvider(agent="alice", settings=settings, session_id="a") as alice,
        TidelineProvider(agent="bob", settings=settings, session_id="b") as bob,
    ):
        alice.sync_turn("My locker code is 4711", "Noted.")
        bob.sync_turn("What is in my locker?", "I do not know yet.")
        wait_until(lambda: all_embedded(database, "alice") and all_embedded(database, "bob"), timeout=60)
        bobs_view = bob.prefetch("locker code") + bob.system_prompt_block()
    assert "4711" not in bobs_view and "What is in my locker?" in bobs_view


def test_a_refused_message_keeps_a_whole_turn_out_but_costs_a_transcript_only_that_message(
    settings: Settings, database: Database
) -> None:
    with TidelineProvider(agent="alice", settings=settings, session_id="s1") as memory:
        with pytest.raises(InvalidInput) as refused:
            memory.sync_turn("Can you read this log?", "y" * 100_001)
        memory.sync_turn("Only the question reached the runtime", "")
        memory.on_session_end(
            [
                {"role": "user", "content": "kept before"},
                {"role": "tool", "content": "z" * 100_001},
                "not a message",  # type: ignore[list-item]
                {"role": "assistant", "content": "kept after"},
            ]
        )
    assert refused.value.field == "content" and "100000" in refused.value.rule
    assert turns_of(database, "alice") == [
        ("s1", "user", "Only the question reached the runtime"),
        ("s1", "user", "kept before"),
        ("s1", "assistant", "kept after"),
    ]


def test_a_session_that_continues_another_stores_the_messages_carried_over_once(
    settings: Settings, database: Database
) -> None:
    carried = [{"role": "user", "content": "The oven is broken"}, {"role": "assistant", "content": "Noted."}]
    with TidelineProvider(agent="alice", settings=settings) as memory:
        memory.on_session_end(carried, session_id="s1")
        memory.continue_session("s2", "s1")
        memory.continue_session("s3", "s2")
        memory.on_session_end([*carried, {"role": "user", "content": "Fixed now"}], session_id="s3")
        memory.on_session_end(carried, session_id="other")  # another conversation says the same words
    assert [(s, c) for s, _, c in turns_of(database, "alice")] == [
        ("s1", "The oven is broken"),
        ("s1", "Noted."),
        ("s3", "Fixed now"),
        ("other", "The oven is broken"),
        ("other", "Noted."),
    ]
