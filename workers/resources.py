"""Per-process worker resources: the composed service and a Redis client for the dream locks, built lazily."""

from __future__ import annotations

import logging
import threading
import weakref

import redis
from celery import Celery

from tideline_core.compose import compose
from tideline_core.errors import ConfigurationError
from tideline_core.service import Service
from tideline_core.settings import Settings
from workers.jobqueue import CeleryJobQueue
from workers.liveness import Finished, Heartbeat, Resend, sweep
from workers.locks import redis_client_url

log = logging.getLogger(__name__)


class WorkerResources:
    """What tasks share inside one worker process. Built on first use, so a forked child builds its own."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._service: Service | None = None
        self._jobs: CeleryJobQueue | None = None
        self._redis: redis.Redis | None = None
        self.heartbeat: Heartbeat | None = None

    def start_heartbeat(self, hostname: str, queues: list[str], resend: Resend, finished: Finished) -> None:
        """Beat for this worker process (the consumer), then send again what dead workers held."""
        span = self.settings.worker_liveness_seconds
        # Alive before the first sweep: a task this worker already recorded is never taken for an orphan.
        self.heartbeat = Heartbeat(self.redis, hostname, queues, resend, span, finished)
        self.heartbeat.start()
        sweep(self.redis, resend, span)

    def stop_heartbeat(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()
            self.heartbeat = None

    @property
    def service(self) -> Service:
        with self._lock:
            if self._service is None:
                self._jobs = CeleryJobQueue(self.settings)
                # Migrations are run by the process that starts the workers (`tideline worker`, `up`, tests).
                self._service = compose(self.settings, jobs=self._jobs, migrate=False)
            return self._service

    @property
    def redis(self) -> redis.Redis:
        """A plain Redis client on the broker (for the dream locks), separate from kombu's connections."""
        with self._lock:
            if self._redis is None:
                self._redis = redis.Redis.from_url(
                    redis_client_url(self.settings.resolved_redis_url), socket_timeout=10, socket_connect_timeout=2
                )
            return self._redis

    def forget_after_fork(self) -> None:
        """In a freshly forked child: drop the parent's handles without closing its connections."""
        with self._lock:
            if self._service is not None:
                self._service.db.engine.dispose(close=False)
            self._service = None
            self._jobs = None
            self._redis = None  # its pool checks the pid and reconnects, but a child should not share it
            self.heartbeat = None  # the parent beats (it consumes the messages); a child only runs tasks

    def close(self) -> None:
        self.stop_heartbeat()
        with self._lock:
            if self._service is not None:
                self._service.close()
            if self._jobs is not None:
                self._jobs.close()
            if self._redis is not None:
                self._redis.close()
            self._service = None
            self._jobs = None
            self._redis = None


_REGISTRY: weakref.WeakKeyDictionary[Celery, WorkerResources] = weakref.WeakKeyDictionary()


def attach(app: Celery, settings: Settings) -> WorkerResources:
    """Bind resources for `settings` to `app` (done once, by `workers.app.create_app`)."""
    resources = _REGISTRY[app] = WorkerResources(settings)
    return resources


def resources_of(app: Celery) -> WorkerResources:
    """The resources of the app a task or signal belongs to."""
    try:
        return _REGISTRY[app]
    except KeyError:
        raise ConfigurationError(f"Celery app {app.main!r} was not built by workers.app.create_app") from None


def all_resources() -> list[WorkerResources]:
    return list(_REGISTRY.values())
