"""Rows loaded by id belong to the asking agent: another agent's ids are absent, never returned or linked."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert

from tideline_core.attention.store import log_hits
from tideline_core.domain.inputs import AmendmentIn, ContextTurnIn, NarrativeIn
from tideline_core.domain.records import InferredSource
from tideline_core.errors import InvalidInput
from tideline_core.store.database import Database
from tideline_core.store.narratives import amend, insert_narrative, load_narratives
from tideline_core.store.schema import NarrativeSource
from tideline_core.store.turns import insert_turns, load_turns

AT = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    database = Database.open(store_url)
    yield database
    database.close()


def write(db: Database, agent: str) -> tuple[int, int]:
    with db.write() as conn:
        (turn,) = insert_turns(conn, agent, [ContextTurnIn(role="user", content=f"{agent} says hi", session_id="s")])
        narrative = insert_narrative(conn, agent, NarrativeIn(gesture=f"{agent} went hiking")).id
    return turn, narrative


def test_loading_by_id_returns_only_the_agents_own_rows(db: Database) -> None:
    alice_turn, alice_memory = write(db, "alice")
    bob_turn, bob_memory = write(db, "bob")
    with db.read() as conn:
        assert set(load_narratives(conn, "alice", [bob_memory, alice_memory, alice_memory])) == {alice_memory}
        assert set(load_turns(conn, "alice", [bob_turn, alice_turn])) == {alice_turn}
        assert load_narratives(conn, "alice", [bob_memory]) == {} and load_turns(conn, "bob", [alice_turn]) == {}


def test_a_memory_cannot_cite_another_agents_turn(db: Database) -> None:
    write(db, "alice")
    bob_turn, _ = write(db, "bob")
    with db.write() as conn, pytest.raises(InvalidInput) as refused:
        insert_narrative(conn, "alice", NarrativeIn(gesture="stole a source", source_links=[bob_turn]))
    assert refused.value.field == "source_links" and str(bob_turn) in str(refused.value)


def test_attention_is_logged_only_on_the_agents_own_memories(db: Database) -> None:
    _, alice_memory = write(db, "alice")
    _, bob_memory = write(db, "bob")
    with db.write() as conn:
        assert log_hits(conn, "alice", [(alice_memory, 0.9), (bob_memory, 0.8)], "search", AT) == 1


def test_a_loaded_narrative_carries_its_tags_links_and_amendments_each_in_order(db: Database) -> None:
    with db.write() as conn:
        turns = insert_turns(
            conn, "alice", [ContextTurnIn(role="user", content=f"turn {i}", session_id="s") for i in range(4)]
        )
        written = insert_narrative(
            conn,
            "alice",
            NarrativeIn(gesture="moved to Lisbon", tags=["move", "city"], source_links=[turns[2], turns[0]]),
        ).id
        conn.execute(
            insert(NarrativeSource).values(
                narrative_id=written, context_id=turns[1], agent_id="alice", inferred=True, score=0.8
            )
        )
        for note in ("the flat is in Alfama", "moved in May, not April", "took the cat"):
            amend(conn, "alice", AmendmentIn(narrative_id=written, note=note))
    with db.read() as conn:
        record = load_narratives(conn, "alice", [written])[written]
    assert record.tags == ("city", "move")
    assert record.source_links == (turns[0], turns[2])
    assert record.inferred_links == (InferredSource(turns[1], 0.8),)
    assert record.amendments == ("the flat is in Alfama", "moved in May, not April", "took the cat")
    assert record.amended is not None and record.amended.note == "took the cat"
