"""The dream stages on the dream queue through real parts: Redis, an in-process worker, a real database."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from celery.schedules import crontab
from celery.signals import task_prerun
from seeds import TOPICS, seed
from sqlalchemy import func, select, update

from tideline_core.dream import STAGES, nightly_stages
from tideline_core.dream.recluster.store import rebuild_topics
from tideline_core.dream.runner.runs import DreamRunRecord, recent_runs, start_run
from tideline_core.errors import Conflict
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.schema import DreamRun, ScanWatermark, TopicCluster, TopicClusterMember
from tideline_core.text.dates import utcnow
from workers import locks
from workers.app import create_app
from workers.pipelines import nightly_lock_ttl
from workers.queues import QUEUE_OF, ROUTES, Queue, TaskName, stage_task
from workers.schedule import beat_schedule

TIMEOUT = 30


def runs(db: Database, agent: str = "alice") -> dict[str, DreamRunRecord]:
    with db.read() as conn:
        return {r.stage: r for r in recent_runs(conn, agent, 20)}


def topic_keywords(db: Database, agent: str = "alice") -> set[str]:
    with db.read() as conn:
        return set(conn.execute(select(TopicCluster.keyword).where(TopicCluster.agent_id == agent)).scalars())


def run(app: Any, name: TaskName, **kwargs: Any) -> dict[str, Any]:
    return dict(app.send_task(str(name), kwargs=kwargs).get(timeout=TIMEOUT))


def stage(app: Any, name: str, agent_id: str) -> dict[str, Any]:
    """Run one dream stage through its own task, as a manual trigger does."""
    return dict(app.send_task(stage_task(name), kwargs={"agent_id": agent_id}).get(timeout=TIMEOUT))


def test_a_manual_recluster_builds_topics_and_soft_clusters_and_records_its_run(
    database: Database, celery_app: Any, celery_worker: Any
) -> None:
    seed(database)
    result = stage(celery_app, "recluster", "alice")

    assert result["topic_clusters"] == len(TOPICS) and result["soft_clusters"] >= 5
    assert result["narratives"] == result["embedded_narratives"] == 20
    assert topic_keywords(database) == TOPICS
    row = runs(database)["recluster"]
    assert (row.status, row.inputs["trigger"], row.outputs["topic_clusters"]) == ("done", "manual", len(TOPICS))

    # Run again by hand the same day: the same clusters, recorded as a run of its own (keyed by its task).
    again = stage(celery_app, "recluster", "alice")
    assert again["topic_clusters"] == result["topic_clusters"] and topic_keywords(database) == TOPICS
    with database.read() as conn:
        both = recent_runs(conn, "alice", 20, stage="recluster")
    assert len(both) == 2 and {r.run_key for r in both} == {r.inputs["task_id"] for r in both}


def test_refresh_graph_and_scan_return_their_figures_and_scan_leaves_the_watermark_alone(
    database: Database, celery_app: Any, celery_worker: Any
) -> None:
    seed(database)
    refreshed = stage(celery_app, "refresh", "alice")
    assert refreshed["narratives"] == 20

    graph = stage(celery_app, "graph", "alice")
    assert graph["nodes"] == 3 and graph["edges"] >= 2 and graph["problems"] == 0

    scanned = stage(celery_app, "scan", "alice")
    assert scanned["unlinked"] == 20 and scanned["links_inferred"] == 0
    assert scanned["markdown"].startswith("# Unindexed context scan")
    assert "markdown" not in runs(database)["scan"].outputs  # the row keeps the figures only
    with database.read() as conn:
        assert conn.execute(select(func.count()).select_from(ScanWatermark)).scalar_one() == 0
    assert {stage for stage, r in runs(database).items() if r.status == "done"} == {"refresh", "graph", "scan"}


def test_the_nightly_chain_runs_every_stage_in_order_records_them_and_releases_the_lock(
    database: Database, celery_app: Any, celery_worker: Any, redis_client: Any, wait_until: Any
) -> None:
    seed(database)
    ran: list[str] = []

    def record(sender: Any = None, **_: Any) -> None:
        ran.append(sender.name)

    task_prerun.connect(record, weak=False)
    try:
        started = run(celery_app, TaskName.NIGHTLY, agent_id="alice")
        assert started["started"] is True and started["stages"] == [s.name for s in nightly_stages()]
        wait_until(lambda: str(TaskName.RELEASE_LOCK) in ran, timeout=TIMEOUT, message="the chain's end")
    finally:
        task_prerun.disconnect(record)
    # Each stage ran as its own task, under the name Flower shows.
    assert [name for name in ran if name != str(TaskName.NIGHTLY)] == [
        *(stage_task(s.name) for s in nightly_stages()),
        str(TaskName.RELEASE_LOCK),
    ]

    stages = [s.name for s in nightly_stages()]
    wait_until(
        lambda: (
            locks.holder(redis_client, "alice") is None
            and all(r.status in ("done", "skipped") for r in runs(database).values())
            and len(runs(database)) == len(stages)
        ),
        timeout=TIMEOUT,
        message="every nightly stage done and the lock released",
    )
    done = runs(database)
    assert sorted(done, key=lambda s: done[s].started_at) == stages
    assert all(r.inputs["trigger"] == "nightly" and r.day == started["day"] for r in done.values())
    assert topic_keywords(database) == TOPICS


def test_a_manual_trigger_is_refused_while_the_nightly_chain_holds_the_lock(
    settings: Settings, database: Database, celery_app: Any, celery_worker: Any, celery_jobs: Any, redis_client: Any
) -> None:
    seed(database)
    token = locks.nightly_token("a-running-chain")
    assert locks.acquire(redis_client, "alice", token, nightly_lock_ttl(settings))

    # The trigger path checks first and says why ...
    with pytest.raises(Conflict, match="nightly dream for agent alice is running; try again later"):
        celery_jobs.start_stage("alice", "recluster")
    # ... and a task that got past it (sent straight to the queue) fails with the same message.
    with pytest.raises(Exception, match="nightly dream for agent alice is running") as failure:
        celery_app.send_task(stage_task("recluster"), kwargs={"agent_id": "alice"}).get(timeout=TIMEOUT)
    assert type(failure.value).__name__ == "Conflict"
    # A second nightly run of the same agent is refused too; another agent is not held up.
    with pytest.raises(Exception, match="nightly dream for agent alice is running"):
        run(celery_app, TaskName.NIGHTLY, agent_id="alice")
    assert celery_jobs.start_stage("bob", "recluster") is not None
    assert topic_keywords(database) == set() and "recluster" not in runs(database)

    locks.release(redis_client, "alice", token)
    assert stage(celery_app, "recluster", "alice")["topic_clusters"] == len(TOPICS)


def test_a_failing_stage_stops_the_chain_is_recorded_failed_and_releases_the_lock(
    database: Database, celery_app: Any, celery_worker: Any, redis_client: Any, wait_until: Any
) -> None:
    seed(database, nan_vector=True)
    run(celery_app, TaskName.NIGHTLY, agent_id="alice")

    wait_until(
        lambda: (
            runs(database).get("recluster") is not None
            and runs(database)["recluster"].status == "failed"
            and locks.holder(redis_client, "alice") is None
        ),
        timeout=TIMEOUT,
        message="recluster failed and the errback released the lock",
    )
    assert "finite" in runs(database)["recluster"].error
    assert "graph" not in runs(database)  # the chain stopped at the failure
    assert runs(database)["refresh"].status == "done"


def test_the_nightly_fan_out_starts_a_chain_for_every_agent_with_narratives(
    database: Database, celery_app: Any, celery_worker: Any, redis_client: Any, wait_until: Any
) -> None:
    seed(database, "alice")
    seed(database, "bob", groups=("garden", "compiler", "wedding"))
    fanned = run(celery_app, TaskName.NIGHTLY_ALL)
    assert fanned == {"started": ["alice", "bob"], "already_running": []}
    for agent in ("alice", "bob"):
        wait_until(
            lambda agent=agent: (
                runs(database, agent).get("graph") is not None
                and runs(database, agent)["graph"].status == "done"
                and locks.holder(redis_client, agent) is None
            ),
            timeout=TIMEOUT,
            message=f"{agent}'s nightly chain",
        )
    assert topic_keywords(database, "bob") == {"garden", "compiler", "wedding"}


def test_a_worker_registers_one_task_per_dream_stage_under_the_stages_name(celery_app: Any, celery_worker: Any) -> None:
    registered = set(celery_app.tasks)
    assert {f"tideline.dream.{s.name}" for s in STAGES} <= registered
    assert {"tideline.dream.scan", "tideline.dream.recluster"} <= registered


def test_beat_fans_out_the_nightly_dream_at_the_configured_time_and_zone_on_the_dream_queue() -> None:
    settings = Settings(dream_at="04:30", dream_timezone="Asia/Shanghai")
    schedule = beat_schedule(settings)
    (entry,) = [e for e in schedule.values() if e["task"] == TaskName.NIGHTLY_ALL]
    assert entry["schedule"] == crontab(minute=30, hour=4) and entry["options"]["expires"] > 0
    assert all(
        QUEUE_OF[name] is Queue.DREAM
        for name in (TaskName.NIGHTLY_ALL, TaskName.NIGHTLY, TaskName.RUN_STAGE, TaskName.RELEASE_LOCK)
    )
    assert all(ROUTES[stage_task(s.name)] == {"queue": "dream"} for s in STAGES)
    app = create_app(settings)
    # The crontab is read in the dream's time zone: 04:30 in Shanghai, not in UTC.
    assert app.conf.timezone == "Asia/Shanghai" and app.conf.beat_schedule["nightly-dream"]["schedule"].tz is not None
    assert app.conf.task_routes[str(TaskName.NIGHTLY_ALL)] == {"queue": "dream"}
    app.close()


def test_readers_never_see_a_half_built_topic_table_while_it_is_rebuilt(database: Database) -> None:
    seed(database, groups=tuple(f"topic{n:02d}" for n in range(40)))
    expected = rebuild_topics(database, "alice").clusters
    assert expected == 40
    seen: list[tuple[int, int]] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            with database.read() as conn:
                clusters = conn.execute(
                    select(func.count()).select_from(TopicCluster).where(TopicCluster.agent_id == "alice")
                ).scalar_one()
                members = conn.execute(
                    select(func.count()).select_from(TopicClusterMember).where(TopicClusterMember.agent_id == "alice")
                ).scalar_one()
            seen.append((clusters, members))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(15):
            assert rebuild_topics(database, "alice").clusters == expected
    finally:
        stop.set()
        reader.join()
    assert len(seen) > 15 and set(seen) == {(expected, expected * 4)}


def test_a_stage_whose_worker_vanished_is_marked_failed_by_the_reconciler_not_left_running(
    database: Database, celery_app: Any, celery_worker: Any
) -> None:
    with database.write() as conn:
        start_run(conn, "alice", "2026-11-28", "recluster", {})  # its worker was SIGKILLed hours ago
        conn.execute(
            update(DreamRun).where(DreamRun.stage == "recluster").values(started_at=utcnow() - timedelta(hours=3))
        )
        start_run(conn, "alice", "2026-11-29", "refresh", {})  # really running now
    result = run(celery_app, TaskName.RECONCILE)
    assert result["interrupted_dream_stages"] == 1
    stale, live = runs(database)["recluster"], runs(database)["refresh"]
    assert stale.status == "failed" and "interrupted" in stale.error and stale.finished_at is not None
    assert live.status == "running"


def test_the_periodic_task_gives_a_grown_agent_its_own_indexes_on_postgresql_and_nothing_else(
    database: Database, celery_app: Any, celery_worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tideline_core.domain.inputs import NarrativeIn
    from tideline_core.store import agent_indexes
    from tideline_core.store.narratives import insert_narrative

    with database.write() as conn:
        for i in range(30):
            insert_narrative(conn, "alice", NarrativeIn(gesture=f"walk {i} by the river"))
        insert_narrative(conn, "bob", NarrativeIn(gesture="one walk"))
    monkeypatch.setattr(agent_indexes, "OWN_ROWS", 20)  # the worker runs in this process
    built = run(celery_app, TaskName.BUILD_AGENT_INDEXES)["built"]
    if database.dialect != "postgresql":  # SQLite's indexes are in memory: nothing to build
        assert built == []
        return
    memories = [own for own in agent_indexes.OWN if (own.kind, own.view) == ("narrative", "kw")]
    assert sorted(built) == sorted(agent_indexes.name("alice", own) for own in memories)
    assert run(celery_app, TaskName.BUILD_AGENT_INDEXES)["built"] == []  # built once; bob's one memory needs none
