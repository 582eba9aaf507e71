"""A person's browsing through the service: filtered pages that never repeat or skip, one memory whole, the sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from service_helpers import FakeQueue

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.errors import InvalidInput, NotFound
from tideline_core.service import MemoryFilter, Service
from tideline_core.service.browse import SourceLink

AGENT = "browser"
START = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def write(service: Service, gesture: str, agent: str = AGENT, **fields: object) -> int:
    return service.write_narrative(agent, NarrativeIn(gesture=gesture, **fields)).id  # type: ignore[arg-type]


def every_page(service: Service, flt: MemoryFilter) -> list[int]:
    seen: list[int] = []
    after = None
    while True:
        page = service.memories_page(AGENT, MemoryFilter(**{**flt.__dict__, "after": after}))
        seen += [m.id for m in page.items]
        if page.next_after is None:
            return seen
        after = page.next_after


@pytest.mark.parametrize("order", ["recent", "weight"])
def test_paging_through_every_memory_shows_each_once_in_order(service: Service, order: str) -> None:
    ids = [
        write(service, f"第{i}次游泳 swim {i}", importance=1 + i % 5, occurred_at=START + timedelta(days=i))
        for i in range(23)
    ]
    seen = every_page(service, MemoryFilter(order=order, limit=5))  # type: ignore[arg-type]
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
    records = service.memories_by_id(AGENT, seen)
    keys = [records[i].weight if order == "weight" else records[i].created_at for i in seen]
    assert keys == sorted(keys, reverse=True)


def test_filters_select_by_type_tags_entities_origin_weight_and_dates(service: Service) -> None:
    swim = write(service, "周四晚上去游泳，教练叫小林", tags=["游泳"], related_entities=["小林"], occurred_at=START)
    dentist = write(
        service,
        "Dentist appointment moved to Friday",
        tags=["health"],
        related_entities=["Dr. Chen"],
        narrative_type="decision",
        importance=5,
        occurred_at=START + timedelta(days=3),
    )
    write(service, "Lunch with 小林's brother", related_entities=["小林的哥哥"], occurred_at=START + timedelta(days=5))

    def shown(**given: object) -> list[int]:
        return [m.id for m in service.memories_page(AGENT, MemoryFilter(**given)).items]  # type: ignore[arg-type]

    assert shown(tags=("游泳",)) == [swim]
    assert shown(entities=("小林",)) == [swim], "an entity matches whole, not as part of another name"
    assert shown(narrative_type="decision") == [dentist]
    assert shown(origin="llm") == []
    heaviest = service.memories_by_id(AGENT, [dentist])[dentist].weight
    assert shown(min_weight=heaviest) == [dentist]
    assert shown(since=START + timedelta(days=1), until=START + timedelta(days=4)) == [dentist]
    page = service.memories_page(AGENT, MemoryFilter())
    assert page.total == 3 and not page.total_capped and page.next_after is None


def test_a_filter_breaking_a_rule_is_refused_naming_the_field(service: Service) -> None:
    for given, field in [
        ({"origin": "robot"}, "origin"),
        ({"order": "random"}, "order"),
        ({"min_weight": 0.9, "max_weight": 0.1}, "min_weight"),
        ({"limit": 0}, "limit"),
        ({"after": "not a cursor"}, "after"),
    ]:
        with pytest.raises(InvalidInput) as refused:
            service.memories_page(AGENT, MemoryFilter(**given))  # type: ignore[arg-type]
        assert refused.value.field == field


def test_browsing_logs_no_attention(service: Service, queue: FakeQueue) -> None:
    write(service, "A quiet memory")
    service.memories_page(AGENT, MemoryFilter())
    service.memories_by_id(AGENT, [1])
    assert queue.attention == []


def test_a_memory_shows_its_source_turns_among_their_neighbours(service: Service) -> None:
    turns = service.record_turns(
        AGENT,
        [
            ContextTurnIn(role="user", content=f"turn {i}: 周四晚上去游泳" if i == 3 else f"turn {i}", session_id="s1")
            for i in range(7)
        ],
    ).ids
    memory = write(service, "周四晚上去游泳", source_links=[turns[3]])
    view = service.memory_view(AGENT, memory)
    (excerpt,) = view.sources
    assert excerpt.links == (SourceLink(turns[3], False, None),)
    assert [t.id for t in excerpt.context] == list(turns[1:6])
    assert view.versions == (view.memory,)


def test_source_turns_side_by_side_show_as_one_stretch_of_their_conversation_each_turn_once(service: Service) -> None:
    near = service.record_turns(
        AGENT, [ContextTurnIn(role="user", content=f"swim {i}", session_id="s1") for i in range(9)]
    ).ids
    (elsewhere,) = service.record_turns(AGENT, [ContextTurnIn(role="user", content="dentist", session_id="s2")]).ids
    memory = write(service, "A digest of both", source_links=[near[3], near[4], near[5], elsewhere])
    first, second = service.memory_view(AGENT, memory).sources
    assert (first.session_id, second.session_id) == ("s1", "s2")
    assert [link.turn_id for link in first.links] == list(near[3:6])
    assert [t.id for t in first.context] == list(near[1:8])
    assert [t.id for t in second.context] == [elsewhere]


def test_a_memory_of_another_agent_is_not_found(service: Service) -> None:
    theirs = write(service, "Someone else's secret", agent="other")
    with pytest.raises(NotFound):
        service.memory_view(AGENT, theirs)
    assert service.memories_by_id(AGENT, [theirs]) == {}


def test_memories_near_one_share_its_tags_or_entities(service: Service) -> None:
    one = write(service, "Swim on Thursday", tags=["swim"], related_entities=["Lin"])
    tagged = write(service, "Swim meet next month", tags=["swim"])
    named = write(service, "Lin moved house", related_entities=["Lin"])
    write(service, "Unrelated cooking", tags=["cook"])
    near = {n.memory.id: n.reason for n in service.memory_view(AGENT, one).near}
    assert near == {tagged: "shares tags", named: "also names Lin"}


def test_sessions_list_latest_first_with_linked_and_unscanned_turns(service: Service) -> None:
    first = service.record_turns(
        AGENT, [ContextTurnIn(role="user", content=f"a{i}", session_id="morning", created_at=START) for i in range(3)]
    ).ids
    service.record_turns(
        AGENT, [ContextTurnIn(role="user", content="b", session_id="evening", created_at=START + timedelta(hours=9))]
    )
    write(service, "From the morning", source_links=[first[0]])
    evening, morning = service.sessions(AGENT)
    assert (evening.session_id, morning.session_id) == ("evening", "morning")
    assert (morning.turns, morning.linked_turns, morning.unscanned_turns) == (3, 1, 3)
    assert [s.session_id for s in service.sessions(AGENT, before=evening.cursor)] == ["morning"]
    view = service.session_view(AGENT, "morning")
    assert [len(t.memories) for t in view.turns] == [1, 0, 0]
    assert not any(t.scanned for t in view.turns)
    with pytest.raises(NotFound):
        service.session_view(AGENT, "never")


def test_agent_ids_lists_every_agent_with_memories_or_turns(service: Service) -> None:
    write(service, "one", agent="b-agent")
    service.record_turns("a-agent", [ContextTurnIn(role="user", content="hi")])
    assert service.agent_ids() == ["a-agent", "b-agent"]
