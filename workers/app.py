"""The Celery app (the workers' composition root): broker, routes, reliability settings and signals."""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery, Task, states
from celery.signals import task_failure, task_received, task_retry, worker_process_init, worker_ready, worker_shutdown
from sqlalchemy.exc import SQLAlchemyError

from tideline_core.errors import TidelineError
from tideline_core.settings import Settings
from workers.liveness import Finished, HeldTask, Resend
from workers.queues import ROUTES, Queue, TaskName
from workers.resources import all_resources, attach, resources_of
from workers.schedule import beat_schedule

log = logging.getLogger(__name__)

TASK_MODULES = ["workers.tasks.ingest", "workers.tasks.dream"]
INGEST_HARD_LIMIT = 300  # seconds; an ingest task that runs longer is stuck, not busy
RESULT_EXPIRES = 24 * 3600
DETAIL_LIMIT = 2_000


def time_limits(settings: Settings) -> tuple[int, int]:
    """(hard, soft) limits for every task: half the visibility timeout, so Redis never redelivers a live task."""
    return _with_soft(max(2, settings.visibility_timeout_seconds // 2))


def ingest_time_limits(settings: Settings) -> tuple[int, int]:
    """(hard, soft) limits of the ingest tasks: the tasks' own, and never past `INGEST_HARD_LIMIT`."""
    return _with_soft(min(INGEST_HARD_LIMIT, time_limits(settings)[0]))


def _with_soft(hard: int) -> tuple[int, int]:
    """A hard limit and its soft limit, which comes first so a task can end cleanly."""
    return hard, max(1, int(hard * 0.8))


def restore_interval(settings: Settings) -> int:
    """How often kombu sweeps unacked messages older than the visibility timeout back into their queue."""
    return max(1, min(10, settings.visibility_timeout_seconds // 10))


def broker_transport_options(settings: Settings) -> dict[str, Any]:
    return {
        "visibility_timeout": settings.visibility_timeout_seconds,
        # kombu 5.7 sweeps every interval × throttle seconds (10 × 10 by default); throttle 1 makes the
        # sweep period the interval itself, so a killed worker's task is back soon after the timeout.
        "unacked_restore_interval": restore_interval(settings),
        "unacked_restore_throttle": 1,
        "socket_connect_timeout": 2,  # TCP only; kombu drops it for Unix sockets, where refusal is immediate
        "socket_timeout": 10,  # a synchronous command (a publish) on a dead connection must not wait forever
        "health_check_interval": 10,
    }


def create_app(settings: Settings) -> Celery:
    """A Celery app for `settings`; task modules load when a worker starts (publishers never import them)."""
    url = settings.resolved_redis_url
    app = Celery("tideline", broker=url, backend=url, include=TASK_MODULES, set_as_current=False)
    hard, soft = time_limits(settings)
    ingest_hard, ingest_soft = ingest_time_limits(settings)
    ingest_limits = {"time_limit": ingest_hard, "soft_time_limit": ingest_soft}
    app.conf.update(
        task_routes=ROUTES,
        task_default_queue=str(Queue.INGEST),
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        enable_utc=True,
        # Messages and results stay in UTC; the time zone is what the beat's crontab (the nightly dream) reads.
        timezone=settings.dream_timezone,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_time_limit=hard,
        task_soft_time_limit=soft,
        task_annotations={str(name): ingest_limits for name in TaskName if name.startswith("tideline.ingest.")},
        broker_transport_options=broker_transport_options(settings),
        result_backend_transport_options={"visibility_timeout": settings.visibility_timeout_seconds},
        redis_socket_connect_timeout=2,
        redis_socket_timeout=10,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=2,
        # A write must never hang on a dead broker: one quick retry, then the publish fails and the
        # reconciler picks the work up later (the outbox).
        task_publish_retry=True,
        task_publish_retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2},
        result_expires=RESULT_EXPIRES,
        task_track_started=True,
        worker_send_task_events=True,
        task_send_sent_event=True,
        worker_hijack_root_logger=False,
        beat_schedule=beat_schedule(settings),
        # One beat schedules at a time (a Redis lock); others stand by. When entries ran is kept in Redis.
        beat_scheduler="workers.beat:SingleBeatScheduler",
    )
    attach(app, settings)
    return app


# ----- signals: cross-cutting concerns live here, not in task bodies -----------------------------


@worker_process_init.connect
def _fresh_resources_in_child(**_: Any) -> None:
    # A prefork child inherits the parent's memory; it must open its own database connections.
    for resources in all_resources():
        resources.forget_after_fork()


def give_back(app: Celery) -> Resend:
    """Send a task a dead worker held again, under its own id and with what followed it in its chain."""

    def resend(task: HeldTask) -> None:
        options = task.options
        app.send_task(
            task.name,
            args=task.args,
            kwargs=task.kwargs,
            task_id=task.id,
            chain=options.get("chain"),
            link=options.get("callbacks"),
            link_error=options.get("errbacks"),
            root_id=options.get("root_id"),
            parent_id=options.get("parent_id"),
        )

    return resend


def finished(app: Celery) -> Finished:
    """Whether a task has finished, from the result backend (every task here stores its result)."""

    def done(task_id: str) -> bool:
        return str(app.backend.get_task_meta(task_id).get("status")) in states.READY_STATES

    return done


# What a task message carries beyond its arguments that a task sent again must carry too.
_CARRIED = ("chain", "callbacks", "errbacks", "root_id", "parent_id")


def held_task(request: Any) -> HeldTask:
    """A received task (Celery's worker request) as the record a heartbeat keeps."""
    carried = request.request_dict
    options = {name: carried[name] for name in _CARRIED if carried.get(name)}
    return HeldTask(str(request.id), str(request.name), list(request.args), dict(request.kwargs), options)


@worker_ready.connect
def _start_heartbeat(sender: Any = None, **_: Any) -> None:
    """Announce this worker, and send again at once what workers that died before it still held."""
    app = getattr(sender, "app", None)
    if app is None:
        return
    queues = sorted(queue.name for queue in sender.task_consumer.queues)
    resources_of(app).start_heartbeat(sender.hostname, queues, give_back(app), finished(app))


@task_received.connect
def _hold(sender: Any = None, request: Any = None, **_: Any) -> None:
    if sender is None or request is None:
        return
    heartbeat = resources_of(sender.app).heartbeat
    if heartbeat is not None:
        heartbeat.hold(held_task(request))


@worker_shutdown.connect
def _stop_heartbeat(sender: Any = None, **_: Any) -> None:
    app = getattr(sender, "app", None)
    if app is not None:
        resources_of(app).stop_heartbeat()


@worker_ready.connect
def _re_embed_when_model_changed(sender: Any = None, **_: Any) -> None:
    """At worker start: rows embedded by another model go back to pending, and the reconciler runs now."""
    app = getattr(sender, "app", None)
    if app is None:
        return
    service = resources_of(app).service
    if not service.embeds:
        return
    try:
        changed = service.mark_stale_embeddings()
    except (SQLAlchemyError, TidelineError):
        log.exception("could not check embeddings for a model change")
        return
    if changed:
        log.warning("%d rows lack a vector from the current model (or a newer view); re-embedding them", changed)
        app.send_task(str(TaskName.RECONCILE))


def _record(task: Task | None, task_id: str | None, state: str, detail: str, kwargs: dict[str, Any] | None) -> None:
    if task is None:
        return
    try:
        resources = resources_of(task.app)
    except TidelineError:
        return  # a task of some other app in this process
    agent_id = str((kwargs or {}).get("agent_id") or "")
    try:
        resources.service.record_task_event(
            task_name=task.name, task_id=task_id or "", agent_id=agent_id, state=state, detail=detail[:DETAIL_LIMIT]
        )
    except SQLAlchemyError:
        log.exception("could not record a %s event for task %s", state, task_id)


@task_failure.connect
def _on_failure(
    sender: Task | None = None,
    task_id: str | None = None,
    exception: BaseException | None = None,
    kwargs: dict[str, Any] | None = None,
    **_: Any,
) -> None:
    _record(sender, task_id, "failure", f"{type(exception).__name__}: {exception}", kwargs)


@task_retry.connect
def _on_retry(sender: Task | None = None, request: Any = None, reason: Any = None, **_: Any) -> None:
    _record(sender, getattr(request, "id", None), "retry", str(reason), getattr(request, "kwargs", None))
