"""The service: writes persist before any derived work is asked for, reads feed attention, stages run on the record."""

from __future__ import annotations

import pytest
from service_helpers import FakeQueue

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn, RecallQuery, SearchIn
from tideline_core.dream.runner.runs import recent_runs
from tideline_core.errors import BrokerUnavailable, Conflict, InvalidInput
from tideline_core.service import Service


def test_a_write_is_committed_before_its_embedding_is_queued(service: Service, queue: FakeQueue) -> None:
    written = service.write_narrative("alice", NarrativeIn(gesture="We planted tomatoes", tags=["garden"]))
    recorded = service.record_turns("alice", [ContextTurnIn(role="user", content="The seedlings are up")])
    assert written.queued and recorded.queued and queue.embeds == ["alice", "alice"]
    assert queue.rows_seen_at_enqueue == [1, 2]
    assert (written.weight, written.recurrence) == (0.5, 1)  # scores 3, 3, 3 and a tag no other memory has


def test_a_write_stands_when_the_queue_is_down_and_says_it_was_not_queued(service: Service, queue: FakeQueue) -> None:
    queue.up = False
    written = service.write_narrative("alice", NarrativeIn(gesture="The broker was down today"))
    assert written.queued is False
    assert [r.id for r in service.recall("alice", RecallQuery())] == [written.id]


def test_a_batch_of_writes_is_all_or_nothing(service: Service, queue: FakeQueue) -> None:
    good = NarrativeIn(gesture="A fine day")
    dangling = NarrativeIn(gesture="Linked to nothing", source_links=[999])
    with pytest.raises(InvalidInput) as refused:
        service.write_narratives("alice", [good, dangling])
    assert refused.value.field == "source_links"
    assert service.recall("alice", RecallQuery()) == [] and queue.embeds == []


def test_reads_hand_their_hits_to_attention_logging_never_writing_it_themselves(
    service: Service, queue: FakeQueue
) -> None:
    kite = service.write_narrative("alice", NarrativeIn(gesture="We flew a red kite on the beach"))
    service.write_narrative("bob", NarrativeIn(gesture="Bob also flew a kite"))
    outcome = service.search("alice", SearchIn(query="kite", mode="keyword"), source="cli")
    assert [h.id for h in outcome.hits] == [kite.id]
    recalled = service.recall("alice", RecallQuery())
    assert [r.id for r in recalled] == [kite.id]
    assert [(agent, [i for i, _ in hits], source) for agent, hits, source in queue.attention] == [
        ("alice", [kite.id], "cli"),
        ("alice", [kite.id], "recall"),
    ]
    assert queue.attention[1][1] == [(kite.id, None)]  # asked for by filter: a hit, but no similarity


def test_a_trigger_names_the_stages_there_are_and_says_why_nothing_started(service: Service, queue: FakeQueue) -> None:
    assert service.trigger("alice", "recluster") == "task-1" and queue.stages == [("alice", "recluster")]
    with pytest.raises(InvalidInput) as unknown:
        service.trigger("alice", "explode")
    assert unknown.value.field == "job" and "recluster" in unknown.value.rule and "'explode'" in unknown.value.rule
    queue.up = False
    with pytest.raises(BrokerUnavailable, match="nothing was started"):
        service.trigger("alice", "scan")
    queue.refuse = True
    with pytest.raises(Conflict, match="nightly dream"):
        service.trigger("alice", "scan")


def test_a_stage_runs_by_name_on_the_record_and_an_unknown_name_is_refused(service: Service) -> None:
    service.write_narrative(
        "alice", NarrativeIn(gesture="Alice asked, Bob answered", entities_role="Alice=ask; Bob=answer")
    )
    graph = service.run_stage("graph", "alice", day="2026-11-30", trigger="manual", task_id="t-1")
    assert (graph["stage"], graph["nodes"], graph["day"]) == ("graph", 2, "2026-11-30")
    scan = service.run_stage("scan", "alice", trigger="manual", task_id="t-2")
    assert scan["markdown"].startswith("# Unindexed context scan") and scan["unlinked"] == 1
    with service.db.read() as conn:
        runs = {r.stage: r for r in recent_runs(conn, "alice")}
    assert runs["graph"].status == "done" and runs["graph"].outputs["nodes"] == 2
    assert runs["graph"].inputs == {"trigger": "manual", "task_id": "t-1"}
    assert "markdown" not in runs["scan"].outputs  # the record keeps the figures, the report goes to the caller
    with pytest.raises(InvalidInput):
        service.run_stage("explode", "alice", trigger="manual", task_id="t-3")


def test_status_says_what_is_stored_and_when_the_queue_cannot_be_reached(service: Service, queue: FakeQueue) -> None:
    service.write_narrative("alice", NarrativeIn(gesture="Counted"))
    report = service.status("alice")
    assert report.counts.narratives == 1 and report.embeddings_pending == 1 and report.embedder == "none"
    assert report.workers == {"ingest@here": ["ingest"]}
    queue.up = False
    down = service.status("alice")
    assert down.queue_depths is None and down.workers is None


def test_an_empty_read_says_whether_its_stage_never_ran_or_ran_and_found_nothing(service: Service) -> None:
    from tideline_core.domain.inputs import GraphQuery, TopicsQuery

    service.write_narrative("alice", NarrativeIn(gesture="A single memory about nothing in particular"))
    assert "nothing built yet" in (service.topics("alice", TopicsQuery()).note or "")
    assert "nothing built yet" in (service.graph("alice", GraphQuery()).note or "")
    service.run_stage("recluster", "alice", trigger="manual", task_id="t")
    service.run_stage("graph", "alice", trigger="manual", task_id="t")
    topics = service.topics("alice", TopicsQuery()).note or ""
    graph = service.graph("alice", GraphQuery()).note or ""
    assert "the recluster stage ran" in topics and "no recurring topic yet" in topics
    assert "the graph stage ran" in graph and "no entity yet" in graph
