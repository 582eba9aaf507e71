"""A person's corrections through the service: each is a new version or a supersession, recorded, and undone exactly."""

from __future__ import annotations

import pytest
from dream_helpers import dump
from service_helpers import FakeQueue

from tideline_core.domain.inputs import NarrativeIn, SearchIn
from tideline_core.errors import Conflict, InvalidInput, NotFound
from tideline_core.service import Service

AGENT = "editor"


def write(service: Service, gesture: str, **fields: object) -> int:
    return service.write_narrative(AGENT, NarrativeIn(gesture=gesture, **fields)).id  # type: ignore[arg-type]


def found(service: Service, words: str) -> list[int]:
    return [hit.id for hit in service.search(AGENT, SearchIn(query=words, mode="keyword", kinds="narratives")).hits]


def test_an_edit_is_a_new_version_that_search_finds_instead_of_the_old(service: Service, queue: FakeQueue) -> None:
    old = write(service, "Swimming on Tuesday with coach Lin", tags=["swim"], importance=2)
    queue.embeds.clear()
    outcome = service.edit_memory(AGENT, old, {"gesture": "Swimming on Thursday with coach Lin", "importance": 4})
    new = outcome.narrative_id
    assert new != old
    records = service.memories_by_id(AGENT, [old, new])
    assert records[old].superseded_by == new and records[old].gesture.endswith("Tuesday with coach Lin")
    assert (records[new].importance, records[new].tags) == (4, ("swim",))
    assert records[new].weight > records[old].weight
    assert found(service, "Thursday") == [new] and found(service, "Tuesday") == []
    assert queue.embeds == [AGENT], "the new version's embedding is queued"
    assert [v.id for v in service.memory_view(AGENT, new).versions] == [old, new]
    run = service.dream_run(AGENT, outcome.run_id)
    assert (run.run.stage, run.run.status, run.run.trigger) == ("edit", "done", "person")


def test_undoing_an_edit_restores_the_store_exactly(service: Service) -> None:
    old = write(service, "周四晚上去游泳", tags=["游泳"])
    before = dump(service.db)
    outcome = service.edit_memory(AGENT, old, {"tags": ["游泳", "小林"]})
    assert dump(service.db) != before
    service.dream_undo(AGENT, outcome.run_id)
    assert dump(service.db) == before


def test_an_edit_that_breaks_a_rule_or_changes_nothing_is_refused_and_stores_nothing(service: Service) -> None:
    old = write(service, "A memory", importance=3)
    before = dump(service.db)
    for changes, field in [
        ({"importance": 9}, "importance"),
        ({"gesture": ""}, "gesture"),
        ({"source_links": [1]}, "source_links"),
        ({"importance": 3}, "changes"),
    ]:
        with pytest.raises(InvalidInput) as refused:
            service.edit_memory(AGENT, old, changes)
        assert refused.value.field == field
    assert dump(service.db) == before


def test_only_the_current_version_is_edited_and_another_agents_memory_is_not_found(service: Service) -> None:
    old = write(service, "First text")
    service.edit_memory(AGENT, old, {"gesture": "Second text"})
    with pytest.raises(Conflict, match="superseded"):
        service.edit_memory(AGENT, old, {"gesture": "Third text"})
    theirs = service.write_narrative("other", NarrativeIn(gesture="Theirs")).id
    with pytest.raises(NotFound):
        service.edit_memory(AGENT, theirs, {"gesture": "Mine now"})


def test_supersede_and_restore_are_recorded_and_undoable(service: Service) -> None:
    old = write(service, "Meeting is on Monday")
    new = write(service, "Meeting moved to Wednesday")
    before = dump(service.db)
    superseded = service.supersede_memory(AGENT, old, new)
    assert service.memories_by_id(AGENT, [old])[old].superseded_by == new
    assert found(service, "Monday") == []
    restored = service.restore_memory(AGENT, old)
    assert service.memories_by_id(AGENT, [old])[old].superseded_by is None
    assert found(service, "Monday") == [old]
    with pytest.raises(Conflict, match="not superseded"):
        service.restore_memory(AGENT, old)
    service.dream_undo(AGENT, restored.run_id)
    service.dream_undo(AGENT, superseded.run_id)
    assert dump(service.db) == before


def test_a_memory_cannot_be_superseded_by_itself_or_by_one_already_replaced(service: Service) -> None:
    one, two, three = write(service, "one"), write(service, "two"), write(service, "three")
    service.supersede_memory(AGENT, two, three)
    for by in (one, two, 999):
        with pytest.raises(InvalidInput) as refused:
            service.supersede_memory(AGENT, one, by)
        assert refused.value.field == "by"
