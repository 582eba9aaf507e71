"""The Celery implementation of the core's JobQueue: typed publishes by task name that never block or fail a write.

A publish that cannot reach the broker is logged and dropped: the row it was about is already
committed with its work marked pending, and the reconciler on beat publishes it again later (the
outbox). Publishers import this module, the queues and the locks, never the tasks.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Sequence
from typing import Any

import redis
from celery import Celery
from kombu.exceptions import ChannelError, KombuError
from redis.exceptions import RedisError

from tideline_core.service.jobs import TaskResult, TaskState
from tideline_core.settings import Settings
from tideline_core.text.dates import utcnow
from workers import locks
from workers.liveness import live_workers
from workers.locks import redis_client_url
from workers.queues import ROUTES, STAGE_TASKS, Queue, TaskName

log = logging.getLogger(__name__)

EMBED_MARK = "tideline:embed-waiting:"
# A mark outlives a job's normal wait in the queue; if its message was lost the reconciler asks again.
EMBED_MARK_SECONDS = 600
WORKERS_MEMO_SECONDS = 1.0
OUTBOX_LIMIT = 10_000  # attention logs waiting for their publish
CLOSE_SECONDS = 5.0
RESULT_POLL_SECONDS = 0.2
# Celery's task states as the service names them (a state not listed, e.g. REVOKED, is a failure).
STATES: dict[str, TaskState] = {"PENDING": "queued", "RECEIVED": "queued", "STARTED": "running", "RETRY": "retrying"}


def embed_mark(agent_id: str) -> str:
    return EMBED_MARK + agent_id


_BROKER_ERRORS = (KombuError, RedisError, OSError)


def _depth(channel: Any, queue: str) -> int:
    """Messages waiting in `queue`, as the transport counts them (a passive declare: every priority list of it)."""
    try:
        return int(channel.queue_declare(queue=queue, passive=True).message_count)
    except ChannelError:  # no message was ever left in it (the Redis transport has no queue without one)
        return 0


class CeleryJobQueue:
    """Publishes by task name (never imports a task) and never raises on a broker fault.

    After a failed publish the circuit stays open for `breaker_seconds`: calls return at once, so
    a dead broker costs each write at most one fast failure. Every call is bounded well under a
    second when Redis is down, so it may run on an event loop thread (or via anyio.to_thread).
    Attention logs are published from a thread of their own (`close` sends what is left).
    """

    def __init__(self, settings: Settings, *, breaker_seconds: float = 2.0, socket_timeout: float = 0.5) -> None:
        url = settings.resolved_redis_url
        self._app = Celery("tideline-jobs", broker=url, set_as_current=False)
        self._app.conf.update(
            task_routes=ROUTES,
            task_serializer="json",
            accept_content=["json"],
            task_send_sent_event=True,
            broker_connection_retry_on_startup=False,
            broker_connection_timeout=socket_timeout,
            broker_connection_max_retries=0,
            task_publish_retry=True,
            task_publish_retry_policy={
                "max_retries": 1,
                "interval_start": 0,
                "interval_step": 0.1,
                "interval_max": 0.1,
            },
            broker_transport_options={
                "visibility_timeout": settings.visibility_timeout_seconds,
                "socket_connect_timeout": socket_timeout,
                "socket_timeout": socket_timeout,
            },
        )
        self._redis = redis.Redis.from_url(
            redis_client_url(url), socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout
        )
        self._breaker_seconds = breaker_seconds
        self._open_until = 0.0
        self._lock = threading.Lock()
        self._workers_seen: tuple[float, dict[str, list[str]]] | None = None
        self._outbox: queue.Queue[tuple[TaskName, dict[str, Any]] | None] = queue.Queue(maxsize=OUTBOX_LIMIT)
        self._publisher: threading.Thread | None = None
        self._url, self._socket_timeout = url, socket_timeout
        self._results: Celery | None = None

    # -- circuit breaker --
    def _circuit_open(self) -> bool:
        with self._lock:
            return time.monotonic() < self._open_until

    def _trip(self, what: str, exc: BaseException) -> None:
        with self._lock:
            self._open_until = time.monotonic() + self._breaker_seconds
        log.warning("broker unreachable (%s): %s: %s", what, type(exc).__name__, exc)

    def _send(self, name: str, kwargs: dict[str, Any]) -> str | None:
        if self._circuit_open():
            return None
        try:
            result = self._app.send_task(str(name), kwargs=kwargs)
        except _BROKER_ERRORS as exc:
            self._trip(f"publish {name}", exc)
            return None
        return str(result.id)

    # -- JobQueue --
    def embed(self, agent_id: str, *, again: bool = False) -> bool:
        if self._circuit_open():
            return False
        try:
            # One waiting embed job per agent: the task clears the mark as it starts, so a row written
            # after that start asks for (and gets) a job of its own.
            waiting = not self._redis.set(embed_mark(agent_id), "1", nx=True, ex=EMBED_MARK_SECONDS)
        except _BROKER_ERRORS as exc:
            self._trip("mark the embed job", exc)
            return False
        if waiting and not again:
            return True
        sent = self._send(TaskName.EMBED_PENDING, {"agent_id": agent_id}) is not None
        if not sent:
            self._forget_mark(agent_id)
        return sent

    def _forget_mark(self, agent_id: str) -> None:
        try:
            self._redis.delete(embed_mark(agent_id))
        except _BROKER_ERRORS as exc:
            self._trip("clear the embed mark", exc)

    def log_attention(self, agent_id: str, hits: Sequence[tuple[int, float | None]], source: str) -> bool:
        if not hits:
            return True
        if self._circuit_open():
            return False
        payload = {
            "agent_id": agent_id,
            "hits": [[int(n), None if s is None else float(s)] for n, s in hits],
            "source": source,
            "at": utcnow().isoformat(),
        }
        # Published from a thread of its own: a search does not wait the 1-2 ms of a publish for
        # what is only a log of its hits. Beyond the backlog's bound the log is dropped, never the search.
        self._start_publisher()
        try:
            self._outbox.put_nowait((TaskName.LOG_ATTENTION, payload))
        except queue.Full:
            return False
        return True

    def _start_publisher(self) -> None:
        with self._lock:
            if self._publisher is None:
                self._publisher = threading.Thread(target=self._publish_outbox, name="tideline-publish", daemon=True)
                self._publisher.start()

    def _publish_outbox(self) -> None:
        while (item := self._outbox.get()) is not None:
            self._send(*item)

    def start_stage(self, agent_id: str, stage: str, *, dry_run: bool = False) -> str | None:
        if not self._lock_free(agent_id):
            return None
        if stage not in STAGE_TASKS:  # the service checks names first; the by-name task says why this one fails
            return self._send(TaskName.RUN_STAGE, {"stage": stage, "agent_id": agent_id, "dry_run": dry_run})
        return self._send(STAGE_TASKS[stage], {"agent_id": agent_id, "dry_run": dry_run})

    def start_dream(self, agent_id: str) -> str | None:
        if not self._lock_free(agent_id):
            return None
        return self._send(TaskName.NIGHTLY, {"agent_id": agent_id, "manual": True})

    def _lock_free(self, agent_id: str) -> bool:
        """False when the broker is unreachable; Conflict while the agent's dream holds its lock."""
        if self._circuit_open():
            return False
        try:
            # Refused up front while the nightly chain holds the agent's lock (the task checks again).
            locks.refuse_while_nightly(self._redis, agent_id)
        except _BROKER_ERRORS as exc:
            self._trip("check the dream lock", exc)
            return False
        return True

    def task_result(self, task_id: str, wait: float) -> TaskResult | None:
        """Polls the result backend (one GET a poll), never subscribing, so any thread may wait."""
        deadline = time.monotonic() + wait
        while True:
            if self._circuit_open():
                return None
            try:
                meta = self._results_app().backend.get_task_meta(task_id)
            except _BROKER_ERRORS as exc:
                self._trip("read a task result", exc)
                return None
            status = str(meta.get("status", "PENDING"))
            if status == "SUCCESS":
                return TaskResult("finished", meta.get("result"))
            if status not in STATES:
                error = meta.get("result")
                return TaskResult("failed", error=f"{type(error).__name__}: {error}" if error else status.lower())
            if time.monotonic() >= deadline:
                return TaskResult(STATES[status])
            time.sleep(min(RESULT_POLL_SECONDS, max(0.0, deadline - time.monotonic())))

    def _results_app(self) -> Celery:
        # Results are read through an app of their own: an app with a result backend subscribes to every
        # task it sends, and the publishing app sends a task for each write.
        with self._lock:
            if self._results is None:
                self._results = Celery("tideline-results", broker=self._url, backend=self._url, set_as_current=False)
                self._results.conf.update(
                    result_serializer="json",
                    accept_content=["json"],
                    redis_socket_timeout=self._socket_timeout,
                    redis_socket_connect_timeout=self._socket_timeout,
                )
            return self._results

    def queue_depths(self) -> dict[str, int] | None:
        if self._circuit_open():
            return None
        try:
            with self._app.connection_for_read() as connection:
                channel = connection.default_channel
                return {str(queue): _depth(channel, str(queue)) for queue in Queue}
        except _BROKER_ERRORS as exc:
            self._trip("queue depths", exc)
            return None

    def workers(self) -> dict[str, list[str]] | None:
        """From the workers' heartbeats in Redis (one scan), not a broadcast that waits for replies.

        Remembered for a second: a search asks whenever rows wait for embedding, and heartbeats
        change far more slowly than searches arrive.
        """
        now = time.monotonic()
        if self._workers_seen is not None and now - self._workers_seen[0] < WORKERS_MEMO_SECONDS:
            return self._workers_seen[1]
        if self._circuit_open():
            return None
        try:
            live = live_workers(self._redis)
        except _BROKER_ERRORS as exc:
            self._trip("read the worker heartbeats", exc)
            return None
        self._workers_seen = (now, live)
        return live

    def close(self) -> None:
        """Publish what is still waiting (a few seconds at most), then let go of the connections."""
        if self._publisher is not None:
            with contextlib.suppress(queue.Full):  # still full after the wait: the publisher is stuck anyway
                self._outbox.put(None, timeout=CLOSE_SECONDS)
            self._publisher.join(timeout=CLOSE_SECONDS)
        self._redis.close()
        self._app.close()
        if self._results is not None:
            self._results.close()
