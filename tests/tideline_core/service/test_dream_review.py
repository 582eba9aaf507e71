"""Dream review through the service: plans kept as proposals, applied once when approved, never again once rejected."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dream_helpers import dump, record_day
from llm_server import ScriptedLLM
from sqlalchemy import select, update
from test_dream import AGENT, digest_from, make_service, memories_from, narratives, run, watermark

from tideline_core.domain.inputs import InjectIn, NarrativeIn
from tideline_core.errors import Conflict
from tideline_core.service import Service
from tideline_core.store.schema import Narrative


@pytest.fixture
def reviewed(tmp_path: Path, store_url: str) -> Iterator[Service]:
    service = make_service(tmp_path, store_url, None, dream_review="all")
    yield service
    service.close()


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def weights(service: Service) -> dict[int, float]:
    with service.db.read() as conn:
        return {int(r.id): float(r.weight) for r in conn.execute(select(Narrative.id, Narrative.weight))}


def test_a_proposal_changes_nothing_until_approved_and_is_then_applied_once_and_undoable(reviewed: Service) -> None:
    record_day(reviewed, AGENT)
    before = dump(reviewed.db)
    proposed = run(reviewed, "solidify")
    assert proposed["proposed"] and proposed["changes_total"] > 0
    assert dump(reviewed.db) == before, "a proposal writes nothing the memory holds"
    (waiting,) = reviewed.dream_review(AGENT)
    assert waiting.run.id == proposed["run_id"] and waiting.run.status == "proposed"
    assert [c.summary for c in waiting.changes] == [c["summary"] for c in proposed["changes"]]
    approved = reviewed.dream_approve(AGENT, waiting.run.id)
    assert approved.run.status == "done" and len(approved.changes) == proposed["changes_total"]
    assert len(narratives(reviewed)) == proposed["memories"] + proposed["digests"]
    assert reviewed.dream_review(AGENT) == []
    with pytest.raises(Conflict, match="was approved"):
        reviewed.dream_approve(AGENT, waiting.run.id)
    reviewed.dream_undo(AGENT, waiting.run.id)
    assert dump(reviewed.db) == before


def test_a_rejected_proposal_applies_nothing_and_its_stage_moves_on_without_proposing_it_again(
    reviewed: Service,
) -> None:
    turn_ids = record_day(reviewed, AGENT)
    proposed = run(reviewed, "solidify")
    rejected = reviewed.dream_reject(AGENT, proposed["run_id"])
    assert rejected.status == "rejected" and narratives(reviewed) == []
    assert watermark(reviewed) == max(turn_ids), "the turns it looked at are not looked at again"
    again = run(reviewed, "solidify", task="t-2")
    assert not again.get("proposed") and again["memories"] == 0 and again["changes_total"] == 0
    assert reviewed.dream_review(AGENT) == []
    with pytest.raises(Conflict, match="was rejected"):
        reviewed.dream_approve(AGENT, proposed["run_id"])


def test_a_rejected_reweighing_is_not_proposed_again_the_next_night(reviewed: Service) -> None:
    for i in range(3):
        reviewed.write_narrative(AGENT, NarrativeIn(gesture=f"walked the dog {i}", tags=["dog", "walk"]))
    first = run(reviewed, "refresh")
    assert first["proposed"]
    reviewed.dream_reject(AGENT, first["run_id"])
    kept = weights(reviewed)
    second = run(reviewed, "refresh", task="t-2")
    assert not second.get("proposed") and second["changes_total"] == 0 and weights(reviewed) == kept
    assert second["rejected_before"] == first["changes_total"], "what it left out, and why, is said"


def test_a_stage_whose_proposal_waits_is_skipped_saying_so(reviewed: Service) -> None:
    record_day(reviewed, AGENT)
    proposed = run(reviewed, "solidify")
    later = run(reviewed, "solidify", task="t-2")
    assert f"proposal {proposed['run_id']} of solidify waits for review" in later["skipped"]
    assert len(reviewed.dream_review(AGENT)) == 1


def test_a_proposal_whose_rows_changed_since_is_refused_naming_them_and_stays_waiting(reviewed: Service) -> None:
    ids = [reviewed.write_narrative(AGENT, NarrativeIn(gesture=f"swim {i}", tags=["swim"])).id for i in range(3)]
    proposed = run(reviewed, "refresh")
    with reviewed.db.write() as conn:  # a person edits a memory the proposal re-weighs
        conn.execute(update(Narrative).where(Narrative.id == ids[0]).values(importance=5))
    with pytest.raises(Conflict, match=rf"narratives id={ids[0]} changed \(importance"):
        reviewed.dream_approve(AGENT, proposed["run_id"])
    (waiting,) = reviewed.dream_review(AGENT)
    assert waiting.run.id == proposed["run_id"]


def test_another_agents_proposal_is_not_found(reviewed: Service) -> None:
    record_day(reviewed, AGENT)
    proposed = run(reviewed, "solidify")
    assert reviewed.dream_review("bob") == []
    with pytest.raises(Exception, match="does not exist for agent bob"):
        reviewed.dream_approve("bob", proposed["run_id"])


def test_review_of_llm_plans_applies_the_extractive_dream_and_keeps_what_the_llm_answered(
    tmp_path: Path, store_url: str, llm: ScriptedLLM
) -> None:
    offline = make_service(tmp_path / "a", store_url, None, dream_review="llm")
    try:
        record_day(offline, AGENT)
        applied = run(offline, "solidify")
        assert not applied.get("proposed") and narratives(offline)
    finally:
        offline.close()


def test_an_llm_answer_under_review_is_a_proposal(tmp_path: Path, store_url: str, llm: ScriptedLLM) -> None:
    llm.by_prompt("solidify", memories_from)
    llm.by_prompt("digest", digest_from)
    online = make_service(tmp_path, store_url, llm, dream_review="llm")
    try:
        record_day(online, AGENT)
        proposed: dict[str, Any] = run(online, "solidify")
        assert proposed["proposed"] and narratives(online) == []
        online.dream_approve(AGENT, proposed["run_id"])
        assert {n.origin for n in narratives(online)} == {"llm"}
    finally:
        online.close()


def test_the_session_start_block_says_how_many_proposals_wait_until_none_does(reviewed: Service) -> None:
    record_day(reviewed, AGENT)
    assert "dream proposal" not in reviewed.session_start(AGENT, InjectIn()).text
    proposed = run(reviewed, "solidify")
    shown = reviewed.session_start(AGENT, InjectIn())
    assert shown.text.rstrip().endswith("1 dream proposal waits for review with your human (memory_dream_review).")
    assert shown.tokens <= shown.budget
    reviewed.dream_reject(AGENT, proposed["run_id"])
    assert "dream proposal" not in reviewed.session_start(AGENT, InjectIn()).text
    assert reviewed.status(AGENT).proposals_waiting == 0


def test_two_reviewers_approving_at_once_apply_the_proposal_once(reviewed: Service) -> None:
    record_day(reviewed, AGENT)
    proposed = run(reviewed, "solidify")
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def approve() -> None:
        barrier.wait()
        try:
            reviewed.dream_approve(AGENT, proposed["run_id"])
            outcomes.append("approved")
        except Conflict as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=approve) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(outcomes)[0] == "approved" and "was approved" in sorted(outcomes)[1], outcomes
    assert len(narratives(reviewed)) == proposed["memories"] + proposed["digests"]
