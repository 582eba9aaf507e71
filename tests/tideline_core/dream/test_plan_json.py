"""A plan kept as a proposal reads back as the same plan, and the same intent gives the same fingerprint."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tideline_core.domain.inputs import NarrativeIn, ProfileIn, SelfConceptIn, ThreadIn
from tideline_core.dream import plan_json
from tideline_core.dream.graph.entities import EntityGraph
from tideline_core.dream.plan import (
    AddNarrative,
    AddSourceLink,
    MoveWatermark,
    Plan,
    PutProfile,
    PutSelfConcept,
    PutThread,
    ReplaceEntityGraph,
    Rescore,
    Reweight,
    Supersede,
)

EVERY_KIND = Plan(
    (
        AddNarrative(
            NarrativeIn(
                gesture="周四晚上去游泳，教练叫小林",
                tags=["游泳", "swim"],
                importance=4,
                occurred_at=datetime(2026, 3, 5, 20, 0, tzinfo=UTC),
                source_links=[3, 4],
            ),
            origin="llm",
            links=(3, 4, 5),
            supersedes=(7,),
        ),
        Rescore(12, importance=5, reason="it kept coming up"),
        Reweight(12, recurrence=4, weight=0.72),
        Supersede(8, 12),
        PutProfile(ProfileIn(entity="小林", kind="fact", content="swimming coach, Thursday evenings")),
        PutSelfConcept(SelfConceptIn(kind="reflection", key="water", content="I think better after a swim")),
        PutThread(ThreadIn(title="Find a Friday lane")),
        AddSourceLink(12, 4, score=0.91, cosine=0.88, shared_words=("游泳", "小林"), runner_up=None),
        MoveWatermark(5),
    )
)


def test_every_kind_of_intent_kept_as_json_reads_back_as_the_same_plan() -> None:
    kept = json.loads(json.dumps(plan_json.dump(EVERY_KIND), ensure_ascii=False))
    assert plan_json.load(kept) == EVERY_KIND


def test_an_intent_read_back_has_the_fingerprint_it_was_kept_with() -> None:
    kept = plan_json.dump(EVERY_KIND)
    again = plan_json.dump(plan_json.load(json.loads(json.dumps(kept))))
    assert [plan_json.fingerprint(i) for i in kept] == [plan_json.fingerprint(i) for i in again]
    assert len({plan_json.fingerprint(i) for i in kept}) == len(kept)


def test_a_plan_that_rebuilds_derived_tables_is_never_kept() -> None:
    rebuild = ReplaceEntityGraph(EntityGraph(nodes=(), edges=(), problems=(), parsed=()))
    assert not plan_json.keepable(Plan((Reweight(1, 3, 0.5), rebuild)))
    assert not plan_json.keepable(Plan())
    assert plan_json.keepable(Plan((Reweight(1, 3, 0.5),)))
    with pytest.raises(ValueError, match="not kept"):
        plan_json.dump_intent(rebuild)
