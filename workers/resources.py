"""Per-process worker resources (database, embedder, vector index), built lazily from the app's settings."""

from __future__ import annotations

import logging
import threading
import weakref

import redis
from celery import Celery

from tideline_core.embedders import Embedder, build_embedder
from tideline_core.errors import ConfigurationError
from tideline_core.search.vectors import VectorIndex
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from workers.locks import redis_client_url

log = logging.getLogger(__name__)


class WorkerResources:
    """What tasks share inside one worker process. Built on first use, so a forked child builds its own."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._db: Database | None = None
        self._embedder: Embedder | None = None
        self._index: VectorIndex | None = None
        self._redis: redis.Redis | None = None

    @property
    def db(self) -> Database:
        with self._lock:
            if self._db is None:
                # Migrations are run by the composition root (`tideline up`, tests); the worker only opens.
                self._db = Database.open(self.settings.resolved_database_url, run_migrations=False)
            return self._db

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = build_embedder(self.settings)
            return self._embedder

    @property
    def index(self) -> VectorIndex:
        db, model = self.db, self.embedder.model
        with self._lock:
            if self._index is None:
                self._index = VectorIndex(db, model)
            return self._index

    @property
    def redis(self) -> redis.Redis:
        """A plain Redis client on the broker (for the dream locks), separate from kombu's connections."""
        with self._lock:
            if self._redis is None:
                self._redis = redis.Redis.from_url(
                    redis_client_url(self.settings.resolved_redis_url),
                    socket_timeout=10,
                    socket_connect_timeout=2,
                )
            return self._redis

    @property
    def embeds(self) -> bool:
        """False when the deployment runs keyword-only (TIDELINE_EMBEDDER=none)."""
        return self.settings.embedder != "none"

    def forget_after_fork(self) -> None:
        """In a freshly forked child: drop the parent's handles without closing its connections."""
        with self._lock:
            if self._db is not None:
                self._db.engine.dispose(close=False)
            self._db = None
            self._index = None
            self._redis = None  # its pool checks the pid and reconnects, but a child should not share it

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
            if self._redis is not None:
                self._redis.close()
            self._db = None
            self._index = None
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
