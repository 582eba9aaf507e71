"""Rows loaded by id belong to the asking agent: another agent's ids are absent, never returned or linked."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from tideline_core.attention.store import log_hits
from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.errors import InvalidInput
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative, load_narratives
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
