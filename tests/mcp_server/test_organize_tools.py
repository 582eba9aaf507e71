"""The script-layer tools through the real MCP protocol: reads of clusters, graph and attention, and the trigger."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from mcp import Client
from mcp_helpers import RecordingJobQueue, call, refused
from seeds import TOPICS, gesture, seed

from mcp_server.app import create_server
from tideline_core.attention.store import log_hits
from tideline_core.dream.graph.store import rebuild_entity_graph
from tideline_core.dream.recluster.store import rebuild_soft_clusters, rebuild_topics
from tideline_core.dream.runner.runs import recent_runs
from tideline_core.embedding import LOCAL_MODEL, NoEmbedder
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.text.dates import utcnow
from workers import locks

pytestmark = pytest.mark.anyio


def done_stages(db: Database) -> set[str]:
    with db.read() as conn:
        return {r.stage for r in recent_runs(conn, "alice") if r.status == "done"}


async def test_a_recluster_triggered_through_the_tool_runs_on_the_worker_and_its_topics_become_visible(
    settings: Settings, database: Database, celery_worker: Any, celery_jobs: Any, wait_until: Any
) -> None:
    seed(database)
    server = create_server(settings, jobs=celery_jobs)
    async with Client(server, raise_exceptions=True) as client:
        before = await call(client, "memory_topics")
        assert before["count"] == 0 and "memory_trigger" in before["note"]

        queued = await call(client, "memory_trigger", job="recluster")
        assert queued["agent"] == "alice" and queued["task_id"]
        wait_until(lambda: "recluster" in done_stages(database), timeout=30, message="the recluster run done")

        topics = await call(client, "memory_topics", sample=2)
        assert {t["keyword"] for t in topics["topics"]} == TOPICS
        garden = next(t for t in topics["topics"] if t["keyword"] == "garden")
        assert garden["size"] == 4 and [s["gesture"] for s in garden["samples"]] == [
            gesture("garden", 3),
            gesture("garden", 2),
        ]
        status = await call(client, "memory_status")
        (run,) = [r for r in status["dream_runs"] if r["stage"] == "recluster"]
        assert run["status"] == "done" and run["trigger"] == "manual" and run["outputs"]["topic_clusters"] == 5

        listed = await call(client, "memory_soft_clusters")
        assert len(listed["clusters"]) >= 5 and sum(c["size"] for c in listed["clusters"]) == 3 * 20
        one = await call(client, "memory_soft_clusters", label=listed["clusters"][0]["label"], limit=3)
        assert len(one["members"]) == 3 and all(m["gesture"].startswith("Moment") for m in one["members"])
        routed = await call(client, "memory_soft_clusters", query="the wedding again")
        assert len(routed["route"]["primary"]) == 3


async def test_a_trigger_is_refused_clearly_while_the_nightly_dream_runs(
    settings: Settings, database: Database, celery_jobs: Any, redis_client: Any
) -> None:
    token = locks.nightly_token("chain-1")
    locks.acquire(redis_client, "alice", token, 60)
    async with Client(create_server(settings, jobs=celery_jobs, embedder=NoEmbedder())) as client:
        message = await refused(client, "memory_trigger", job="graph")
        assert "nightly dream for agent alice is running; try again later" in message
        locks.release(redis_client, "alice", token)
        assert (await call(client, "memory_trigger", job="graph"))["task_id"]


async def test_a_trigger_with_the_broker_down_says_nothing_was_started_and_a_bad_job_is_named(
    local_settings: Settings,
) -> None:
    from workers.jobqueue import CeleryJobQueue

    down = CeleryJobQueue(local_settings)  # redis://127.0.0.1:1: nothing listens there
    async with Client(create_server(local_settings, jobs=down)) as client:
        assert "nothing was started" in await refused(client, "memory_trigger", job="scan")
        assert "invalid input: job" in await refused(client, "memory_trigger", job="explode")
    down.close()


async def test_the_graph_shows_top_nodes_one_entity_or_a_pair(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        assert "memory_trigger" in (await call(client, "memory_graph"))["note"]
        db = Database.open(local_settings.resolved_database_url)
        seed(db)
        rebuild_entity_graph(db, "alice", {})
        db.close()
        top = await call(client, "memory_graph")
        assert [n["name"] for n in top["nodes"]] == ["Alice", "Bob", "Carol"] and top["mode"] == "top"
        # Times end in Z, as in every other result.
        assert all(n["first_seen"].endswith("Z") and n["last_seen"].endswith("Z") for n in top["nodes"])
        alice = await call(client, "memory_graph", entity="Alice")
        assert alice["mode"] == "entity" and {e["source"] for e in alice["edges"]} | {
            e["target"] for e in alice["edges"]
        } == {"Alice", "Bob", "Carol"}
        pair = await call(client, "memory_graph", entity="Carol", other="Alice")
        assert [(e["source_role"], e["target_role"], e["count"]) for e in pair["edges"]] in (
            [("ask", "answer", 10)],
            [("answer", "ask", 10)],
        )
        assert "needs `entity`" in await refused(client, "memory_graph", other="Alice")


async def test_the_heatmap_attributes_hits_to_clusters_and_lists_the_deserts(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    db = Database.open(local_settings.resolved_database_url)
    ids = seed(db)
    rebuild_topics(db, "alice")
    rebuild_soft_clusters(db, "alice", LOCAL_MODEL)
    with db.write() as conn:  # three hits on garden memories today, one on a wedding memory ten days ago
        log_hits(conn, "alice", [(ids[0], 0.9), (ids[1], 0.8), (ids[2], 0.7)], "search", utcnow())
        log_hits(conn, "alice", [(ids[8], 0.9)], "t1", utcnow() - timedelta(days=10))
    db.close()
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        week = await call(client, "memory_attention_heatmap")
        month = await call(client, "memory_attention_heatmap", days=30)
        assert "invalid input: days" in await refused(client, "memory_attention_heatmap", days=0)
    topic = next(k for k in week["kinds"] if k["kind"] == "topic")
    assert week["total_hits"] == 3 and [(r["cluster"], r["hits"]) for r in topic["rows"]] == [("garden", 3)]
    assert {d["cluster"] for d in topic["deserts"]} == TOPICS - {"garden"}
    assert "# Attention heatmap" in week["markdown"] and "garden" in week["markdown"]
    assert month["total_hits"] == 4
