"""The LLM's answers at each DREAM stage: well-formed ones are taken, anything out of bounds is refused whole."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from tideline_core.dream.answers import (
    CombAnswer,
    DigestAnswer,
    DreamAnswer,
    DriftAnswer,
    Merge,
    Reweigh,
    SolidifiedMemory,
    SolidifyAnswer,
    ThreadOpen,
    answer_schema,
)

MEMORY: dict[str, Any] = {
    "gesture": "Alice moved the launch to March.",
    "context": "The beta had two open crashes.",
    "moment": "Monday stand-up",
    "cognition_direction": "Plan the release notes for March.",
    "importance": 4,
    "emotional": 2,
    "unresolved": 3,
    "tags": ["launch", "schedule"],
    "entities_role": "Alice=decides",
    "related_entities": ["Alice"],
    "narrative_type": "decision",
    "source_turns": [1, 2],
}
COMB: dict[str, Any] = {
    "reweigh": [{"narrative_id": 7, "unresolved": 1, "reason": "settled in the afternoon"}],
    "profiles": [{"entity": "Alice", "kind": "impression", "content": "Decides quickly, explains later."}],
    "self_concept": [{"kind": "terrain", "key": "release planning", "content": "I keep the launch calendar."}],
    "conflicts": [{"pair": 0, "contradicts": True, "note": "March against February", "record_as": "thread"}],
    "merges": [{"keep_id": 9, "superseded_ids": [4]}],
    "open_threads": [{"title": "Confirm the launch date with Bob", "priority": 4}],
    "close_threads": [{"thread_id": 3, "status": "resolved", "note": "March it is"}],
}


def refused(model: type[BaseModel], answer: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as error:
        model.model_validate_json(json.dumps(answer))
    return str(error.value)


def test_a_full_solidify_answer_is_taken_as_written() -> None:
    answer = SolidifyAnswer.model_validate_json(json.dumps({"memories": [MEMORY]}))
    assert answer.memories[0].gesture == MEMORY["gesture"] and answer.memories[0].source_turns == [1, 2]


def test_a_memory_needs_only_its_gesture_and_source_turns() -> None:
    memory = SolidifiedMemory.model_validate({"gesture": "  小林把发布推迟到三月。 ", "source_turns": [3]})
    assert memory.gesture == "小林把发布推迟到三月。"
    assert (memory.importance, memory.emotional, memory.unresolved, memory.narrative_type) == (3, 3, 3, "event")


def test_writing_nothing_is_a_valid_solidify_answer() -> None:
    assert SolidifyAnswer.model_validate_json('{"memories": []}').memories == []


def test_more_than_three_memories_are_refused() -> None:
    assert "memories" in refused(SolidifyAnswer, {"memories": [MEMORY] * 4})


@pytest.mark.parametrize("score", [0, 6, True, "3", 3.0, None])
def test_a_score_outside_one_to_five_or_not_an_integer_is_refused(score: Any) -> None:
    assert "importance" in refused(SolidifiedMemory, {**MEMORY, "importance": score})


@pytest.mark.parametrize(
    "change",
    [
        {"mood": "happy"},  # unknown field
        {"gesture": "   "},  # empty once stripped
        {"gesture": "x" * 2_001},
        {"source_turns": []},
        {"source_turns": [0]},
        {"tags": [f"t{i}" for i in range(9)]},
        {"tags": [""]},
        {"narrative_type": "dream"},
        {"context": "before\x00after"},
    ],
)
def test_a_memory_out_of_bounds_is_refused(change: dict[str, Any]) -> None:
    refused(SolidifiedMemory, {**MEMORY, **change})


def test_a_digest_needs_what_happened_and_bounds_its_lists() -> None:
    digest = DigestAnswer.model_validate({"what": "Alice and the agent moved the launch.", "who": ["Alice"]})
    assert digest.decisions == [] and digest.who == ["Alice"]
    refused(DigestAnswer, {"who": ["Alice"]})
    refused(DigestAnswer, {"what": "x", "decisions": ["d"] * 11})


def test_a_full_comb_answer_is_taken_and_an_empty_one_changes_nothing() -> None:
    answer = CombAnswer.model_validate_json(json.dumps(COMB))
    assert answer.merges[0].superseded_ids == [4] and answer.conflicts[0].record_as == "thread"
    empty = CombAnswer.model_validate_json("{}")
    assert not any(getattr(empty, field) for field in CombAnswer.model_fields)


def test_a_reweigh_that_changes_no_score_is_refused() -> None:
    assert "at least one score" in refused(Reweigh, {"narrative_id": 7, "reason": "looks right"})


def test_a_merge_that_keeps_a_memory_it_supersedes_is_refused() -> None:
    assert "supersede itself" in refused(Merge, {"keep_id": 4, "superseded_ids": [4, 5]})


@pytest.mark.parametrize(
    "change",
    [
        {"profiles": [{"entity": "Alice", "kind": "fact", "content": "x"}]},
        {"self_concept": [{"kind": "terrain", "key": "k", "content": ""}]},
        {"conflicts": [{"pair": -1, "contradicts": False, "note": ""}]},
        {"close_threads": [{"thread_id": 3, "status": "open"}]},
        {"open_threads": [{"title": "t"}] * 6},
        {"reweigh": [{"narrative_id": 0, "importance": 2, "reason": ""}]},
        {"merges": [{"keep_id": 1, "superseded_ids": []}]},
        {"verdict": "all good"},
    ],
)
def test_a_comb_answer_out_of_bounds_is_refused(change: dict[str, Any]) -> None:
    refused(CombAnswer, {**COMB, **change})


def test_a_thread_gets_a_middle_priority_unless_told() -> None:
    assert ThreadOpen.model_validate({"title": "Ask Bob"}).priority == 3


def test_drift_may_find_nothing() -> None:
    answer = DriftAnswer.model_validate_json('{"connection": false}')
    assert answer.write == "none" and answer.linked_ids == []


def test_drift_may_write_an_insight_or_a_thread_about_a_connection() -> None:
    insight = {"connection": True, "explanation": "Both slips followed a rushed review.", "linked_ids": [3, 9]}
    assert DriftAnswer.model_validate({**insight, "write": "insight", "insight": "Rushed reviews let slips through."})
    assert DriftAnswer.model_validate({**insight, "write": "thread", "thread_title": "Slow down reviews?"})


@pytest.mark.parametrize(
    ("answer", "rule"),
    [
        ({"connection": False, "write": "insight", "insight": "x"}, "without a connection"),
        ({"connection": True, "write": "insight", "insight": "  "}, "insight text is empty"),
        ({"connection": True, "write": "thread"}, "thread_title is empty"),
        ({"connection": "yes"}, "connection"),
        ({"connection": True, "linked_ids": list(range(1, 12))}, "linked_ids"),
    ],
)
def test_an_inconsistent_drift_answer_is_refused(answer: dict[str, Any], rule: str) -> None:
    assert rule in refused(DriftAnswer, answer)


def test_a_dream_has_three_to_five_symbols_a_dream_and_a_reflection() -> None:
    dream = {"symbols": ["钥匙", "雨", "三月"], "dream": "一把钥匙在雨里发芽。", "reflection": "我仍挂念发布日期。"}
    assert DreamAnswer.model_validate(dream).symbols == ["钥匙", "雨", "三月"]
    refused(DreamAnswer, {**dream, "symbols": ["钥匙", "雨"]})
    refused(DreamAnswer, {**dream, "symbols": ["a", "b", "c", "d", "e", "f"]})
    refused(DreamAnswer, {**dream, "reflection": ""})


@pytest.mark.parametrize("model", [SolidifyAnswer, DigestAnswer, CombAnswer, DriftAnswer, DreamAnswer])
def test_the_schema_shown_to_the_model_forbids_extra_fields_and_bounds_every_list_and_text(
    model: type[BaseModel],
) -> None:
    schema = answer_schema(model)
    assert json.loads(json.dumps(schema)) == schema
    objects = [schema, *schema.get("$defs", {}).values()]
    assert all(node["additionalProperties"] is False for node in objects)
    for node in objects:
        for name, prop in node["properties"].items():
            branches = prop.get("anyOf", [prop])
            for branch in branches:
                if branch.get("type") == "string":
                    assert "maxLength" in branch or "enum" in branch, name
                if branch.get("type") == "array":
                    assert "maxItems" in branch, name
                    if branch["items"].get("type") == "string":
                        assert "maxLength" in branch["items"], name
            assert "title" not in prop


def test_the_schema_keeps_a_field_named_title() -> None:
    schema = answer_schema(CombAnswer)
    assert "title" in schema["$defs"]["ThreadOpen"]["properties"]
    assert "title" in schema["$defs"]["ThreadOpen"]["required"]
