"""The dream as an MCP client meets it: a dry run's changes come back from memory_trigger; runs show their state."""

from __future__ import annotations

from typing import Any

import pytest
from dream_helpers import checksums, record_day
from mcp import Client
from mcp_helpers import RecordingJobQueue, call, refused
from seeds import seed

from mcp_server.app import create_server
from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn
from tideline_core.errors import Conflict
from tideline_core.settings import Settings
from tideline_core.store.database import Database

pytestmark = pytest.mark.anyio


async def test_a_dry_run_through_the_tool_returns_the_changes_the_worker_computed_and_writes_nothing(
    settings: Settings, database: Database, celery_worker: Any, celery_jobs: Any
) -> None:
    seed(database)
    before = checksums(database)
    async with Client(create_server(settings, jobs=celery_jobs), raise_exceptions=True) as client:
        dry = await call(client, "memory_trigger", job="recluster", dry_run=True, wait=120)
        log = await call(client, "memory_dream_log")
    assert (dry["state"], dry["dry_run"], dry["error"]) == ("finished", True, None)
    result = dry["result"]
    assert result["stage"] == "recluster" and result["dry_run"] and result["run_id"] is None
    topics = next(c for c in result["changes"] if c["target"] == "topic_clusters")
    assert topics["action"] == "rebuild" and topics["before"]["clusters"] == 0 and topics["after"]["clusters"] == 5
    assert result["figures"]["topic_clusters"] == 5 and result["changes_total"] == len(result["changes"])
    assert checksums(database) == before and log["runs"] == []


async def test_a_real_run_waited_for_returns_its_run_and_changes(
    settings: Settings, database: Database, celery_worker: Any, celery_jobs: Any
) -> None:
    seed(database)
    async with Client(create_server(settings, jobs=celery_jobs), raise_exceptions=True) as client:
        ran = await call(client, "memory_trigger", job="graph", wait=120)
        shown = await call(client, "memory_dream_log", run_id=ran["result"]["run_id"])
    assert ran["state"] == "finished" and not ran["dry_run"]
    (change,) = shown["changes"]
    assert change["action"] == "rebuild" and change["target"] == "entity_nodes"
    assert shown["runs"][0]["status"] == "done" and shown["runs"][0]["outputs"]["undoable"] is False


async def test_a_dry_run_waits_by_default_and_a_wait_is_checked(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        still = await call(client, "memory_trigger", job="scan", dry_run=True)
        started = await call(client, "memory_trigger", job="scan")
        too_long = await refused(client, "memory_trigger", job="scan", wait=301)
        whole = await refused(client, "memory_trigger", job="dream", wait=10)
    # Not finished within the wait: the state says so, and there is no result to read yet.
    assert (still["state"], still["result"]) == ("queued", None) and dispatcher.waits == [(still["task_id"], 60.0)]
    assert started["state"] == "started"  # a real run is not waited for unless asked
    assert "invalid input: wait" in too_long and "300" in too_long
    assert "invalid input: wait" in whole and "one stage" in whole


async def test_memory_status_and_the_log_show_an_undone_run_as_undone(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    service = compose(local_settings, jobs=dispatcher)
    try:
        record_day(service, "alice")
        solidify = service.run_stage("solidify", "alice", trigger="manual", task_id="t-1")
        recluster = service.run_stage("recluster", "alice", trigger="manual", task_id="t-2")
        service.dream_undo("alice", solidify["run_id"])
        with pytest.raises(Conflict, match="cannot be undone: it rebuilt the topic clusters whole"):
            service.dream_undo("alice", recluster["run_id"])
    finally:
        service.close()
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        status = await call(client, "memory_status")
        log = await call(client, "memory_dream_log")
    for runs in (status["dream_runs"], log["runs"]):
        states = {r["stage"]: r["status"] for r in runs}
        assert states == {"solidify": "undone", "recluster": "done"}


async def test_an_agent_reviews_its_dreams_proposals_with_its_human_through_the_tool(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    settings = local_settings.model_copy(update={"dream_review": "all"})
    service = compose(settings, jobs=dispatcher)
    try:
        record_day(service, "alice")
        first = service.run_stage("solidify", "alice", trigger="manual", task_id="t-1")
        for i in range(3):
            service.write_narrative("alice", NarrativeIn(gesture=f"swam {i} lengths", tags=["swim"]))
        second = service.run_stage("refresh", "alice", trigger="manual", task_id="t-2")
    finally:
        service.close()
    async with Client(create_server(settings, jobs=dispatcher), raise_exceptions=True) as client:
        listed = await call(client, "memory_dream_review")
        status = await call(client, "memory_status")
        approved = await call(client, "memory_dream_review", action="approve", run_id=first["run_id"])
        again = await refused(client, "memory_dream_review", action="approve", run_id=first["run_id"])
        nameless = await refused(client, "memory_dream_review", action="reject")
        rejected = await call(client, "memory_dream_review", action="reject", run_id=second["run_id"])
        left = await call(client, "memory_dream_review")
        recalled = await call(client, "memory_recall", limit=50)
    assert [p["run"]["id"] for p in listed["proposals"]] == [first["run_id"], second["run_id"]]
    assert all(p["run"]["status"] == "proposed" and p["changes"] for p in listed["proposals"])
    assert status["proposals_waiting"] == 2
    assert approved["proposals"][0]["run"]["status"] == "done" and approved["proposals"][0]["changes"]
    assert "was approved" in again
    assert "invalid input: run_id" in nameless and "required to approve or reject" in nameless
    assert rejected["proposals"][0]["run"]["status"] == "rejected" and left["proposals"] == []
    assert any("Atlas" in m["gesture"] for m in recalled["narratives"]), "what the approved proposal wrote is kept"
