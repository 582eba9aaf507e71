"""The dispatcher never hangs or raises on a dead broker; the app's limits keep Redis from redelivering live tasks."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tideline_core.settings import Settings
from workers.app import broker_transport_options, create_app, time_limits
from workers.jobqueue import CeleryJobQueue
from workers.queues import ROUTES, TaskName
from workers.schedule import beat_schedule


def test_a_dead_broker_costs_one_fast_failure_then_the_circuit_stays_open(make_settings: Any, tmp_path: Path) -> None:
    dispatcher = CeleryJobQueue(make_settings(redis_url=f"redis+socket://{tmp_path}/gone.sock"))
    started = time.monotonic()
    assert dispatcher.embed("alice") is False
    assert dispatcher.log_attention("alice", [(1, 0.9)], "t1") is False
    assert dispatcher.start_stage("alice", "recluster") is None
    assert dispatcher.queue_depths() is None and dispatcher.workers() is None
    assert dispatcher.task_result("some-task", 30) is None
    assert time.monotonic() - started < 0.5
    dispatcher.close()


def test_the_dispatcher_sees_queued_work_and_the_live_worker(
    settings: Settings, celery_worker: Any, celery_jobs: CeleryJobQueue
) -> None:
    assert celery_jobs.queue_depths() == {"ingest": 0, "dream": 0}
    workers = celery_jobs.workers()
    assert workers is not None and list(workers.values()) == [["dream", "ingest"]]


def test_a_task_waited_for_gives_its_result_or_why_it_failed(
    settings: Settings, database: Any, celery_worker: Any, celery_jobs: CeleryJobQueue
) -> None:
    task_id = celery_jobs.start_stage("alice", "refresh", dry_run=True)
    assert task_id is not None
    done = celery_jobs.task_result(task_id, 60)
    assert done is not None and done.state == "finished" and done.value["dry_run"] is True
    failing = celery_jobs.start_stage("alice", "explode")
    assert failing is not None
    failed = celery_jobs.task_result(failing, 60)
    assert failed is not None and failed.state == "failed" and "job" in failed.error and "explode" in failed.error


def test_attention_logs_published_in_the_background_all_reach_the_queue_by_close(settings: Settings) -> None:
    jobs = CeleryJobQueue(settings)
    for i in range(200):
        assert jobs.log_attention("alice", [(i + 1, 0.5)], "search")
    jobs.close()
    watcher = CeleryJobQueue(settings)
    try:
        assert watcher.queue_depths() == {"ingest": 200, "dream": 0}, "every log reached the queue"
    finally:
        watcher.close()


def test_a_trigger_for_a_dream_job_lands_on_the_dream_queue(celery_jobs: CeleryJobQueue) -> None:
    assert celery_jobs.start_stage("alice", "recluster") is not None
    assert celery_jobs.queue_depths() == {"ingest": 0, "dream": 1}


def test_every_time_limit_is_well_below_the_visibility_timeout_and_killed_tasks_come_back_soon() -> None:
    for visibility in (8, 60, 3600):
        settings = Settings(visibility_timeout_seconds=visibility)
        hard, soft = time_limits(settings)
        assert soft < hard <= visibility / 2
        app = create_app(settings)
        assert app.conf.task_time_limit == hard
        assert all(a["time_limit"] <= hard for a in app.conf.task_annotations.values())
        options = broker_transport_options(settings)
        assert options["visibility_timeout"] == visibility
        assert options["unacked_restore_interval"] * options["unacked_restore_throttle"] <= max(1, visibility / 6)
        assert app.conf.task_routes == ROUTES and app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
        app.close()


def test_every_beat_entry_expires_and_reconcile_runs_on_its_interval() -> None:
    schedule = beat_schedule(Settings(reconcile_interval_seconds=45))
    assert all("expires" in entry["options"] for entry in schedule.values())
    (entry,) = [e for e in schedule.values() if e["task"] == TaskName.RECONCILE]
    assert entry["schedule"] == 45


def test_agents_own_indexes_are_checked_for_periodically_on_the_dream_queue(tmp_path: Path) -> None:
    (entry,) = [e for e in beat_schedule(Settings()).values() if e["task"] == TaskName.BUILD_AGENT_INDEXES]
    assert entry["schedule"] == entry["options"]["expires"]  # a late check is dropped: the next one covers it
    assert ROUTES[str(TaskName.BUILD_AGENT_INDEXES)] == {"queue": "dream"}
    app = create_app(Settings(home=tmp_path))
    app.loader.import_default_modules()  # what a worker does at start
    assert str(TaskName.BUILD_AGENT_INDEXES) in app.tasks
    app.close()
