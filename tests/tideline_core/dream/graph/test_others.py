"""Entities are others: the agent, its user, pronouns and contractions never are; the people talked about are."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.dream.graph.entities import EntityMention, build_graph
from tideline_core.dream.graph.others import is_contraction, is_entity, own_speakers
from tideline_core.dream.graph.store import read_graph, rebuild_entity_graph
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.turns import insert_turns

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.mark.parametrize("word", ["I", "me", "my", "You", "we", "they", "我", "你", "我们", "咱们", "他们", "自己"])
def test_a_pronoun_is_never_an_entity(word: str) -> None:
    assert not is_entity(word)


@pytest.mark.parametrize("word", ["I'll", "I’ve", "don't", "it's", "That's", "we're", "she'd", "I'm", "can't"])
def test_a_contraction_is_never_an_entity(word: str) -> None:
    assert is_contraction(word) and not is_entity(word)


@pytest.mark.parametrize("name", ["O'Brien", "Alice's", "D'Angelo", "小林", "Caroline", "Mom"])
def test_a_name_is_an_entity_apostrophe_or_not(name: str) -> None:
    assert is_entity(name)


def test_the_speaker_roles_and_the_own_names_are_not_entities_case_aside() -> None:
    assert not is_entity("assistant") and not is_entity("User")
    assert not is_entity("aria", own={"Aria"})
    assert is_entity("Alice", agent_id="alice") and not is_entity("alice", agent_id="alice")


def test_the_agent_and_its_user_are_named_only_by_a_session_where_the_agent_speaks() -> None:
    turns = [
        ("chat", "user", "Bob"),
        ("chat", "assistant", "Aria"),
        ("locomo-1", "user", "Caroline"),
        ("locomo-1", "user", "Melanie"),
    ]
    assert own_speakers(turns) == {"Bob", "Aria"}


def test_the_graph_keeps_only_others_as_nodes_and_edge_ends() -> None:
    graph = build_graph(
        [
            EntityMention(1, T0, "我=执行; 小林=教练", ("I'll",)),
            EntityMention(2, T0, "assistant=helper; Aria=agent; Caroline=friend", ("me", "I've", "Melanie")),
        ],
        own={"Aria"},
    )
    assert sorted(n.name for n in graph.nodes) == ["Caroline", "Melanie", "小林"]
    assert {(e.source, e.target) for e in graph.edges} == {("Caroline", "Melanie")}


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    database = Database.open(store_url)
    yield database
    database.close()


def test_the_stored_graph_leaves_out_the_agent_its_user_and_pronouns_but_keeps_people_talked_about(
    db: Database,
) -> None:
    def turn(session: str, role: str, speaker: str, minute: int) -> ContextTurnIn:
        return ContextTurnIn(
            role=role, speaker=speaker, content="hi", session_id=session, created_at=T0 + timedelta(minutes=minute)
        )

    with db.write() as conn:
        insert_turns(
            conn,
            "alice",
            [
                turn("chat", "user", "Bob", 0),
                turn("chat", "assistant", "Aria", 1),
                turn("talk", "user", "Caroline", 2),
                turn("talk", "user", "Melanie", 3),
            ],
        )
        for roles, related in [
            ("Bob=asker; Aria=helper; Carol=sister", ["I'll", "me"]),
            ("Caroline=speaker; Melanie=speaker", ["I've", "我"]),
        ]:
            insert_narrative(conn, "alice", NarrativeIn(gesture="notes", entities_role=roles, related_entities=related))
    rebuild_entity_graph(db, "alice", {})

    with db.read() as conn:
        nodes, edges = read_graph(conn, "alice", top=50)
    assert sorted(n.name for n in nodes) == ["Carol", "Caroline", "Melanie"]
    assert {(e.source, e.target) for e in edges} == {("Caroline", "Melanie")}
