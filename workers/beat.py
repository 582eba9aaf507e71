"""One beat at a time: the scheduler that sends only while it holds the schedule's lock in Redis.

Every `tideline beat` runs `SingleBeatScheduler`. On each tick it takes or renews the lock
`tideline:beat-lock` (redis-py's `Lock`, with an expiry of `TIDELINE_BEAT_LOCK_SECONDS`, renewed by its
holder at least three times a span) and only then looks for due tasks. Any other beat on the
same Redis finds the lock held, sends nothing and stands by, trying again every third of a span; when
the holder stops (it releases the lock) or dies (its lock lapses), one of them takes over. A holder
that fails to renew — Redis unreachable, or the process paused past the span — stops sending at once.

When each entry last ran is kept in Redis too (`tideline:beat-last-run`), so a beat that takes over
neither repeats what the previous one sent (tonight's dream) nor misses what came due during the
hand-over. Each beat also announces itself (`tideline:beat:<host>#<pid>`, active or standby) for
`tideline status` and the `tideline health beat` probe.

Why not celery-redbeat (2.4.2), which also keeps one beat on a Redis lock: a beat standing by there
waits inside its start-up signal, blocked on the lock, so it neither announces itself nor answers
a probe until it takes over, and it swaps redis-py's extend script for its own. Here the lock is
redis-py's `Lock` as it ships, and the schedule Celery's own.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import redis
from celery.beat import ScheduleEntry, Scheduler

from workers import locks

log = logging.getLogger(__name__)

LOCK_KEY = "tideline:beat-lock"
LAST_RUN_KEY = "tideline:beat-last-run"
BEAT_PREFIX = "tideline:beat:"
ACTIVE, STANDBY = "active", "standby"


@dataclass(frozen=True)
class BeatState:
    """One running beat as it last announced itself."""

    node: str  # host#pid
    hostname: str
    pid: int
    role: str  # active (holds the schedule) or standby


def node_name() -> str:
    return f"{socket.gethostname()}#{os.getpid()}"


def schedule_holder(client: redis.Redis) -> str | None:
    """The node (host#pid) of the beat holding the schedule, or None when no beat does."""
    value = client.get(LOCK_KEY)
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def running_beats(client: redis.Redis) -> list[BeatState]:
    """Every beat that announced itself within its lock span, active first."""
    keys = list(client.scan_iter(match=f"{BEAT_PREFIX}*", count=100))
    found = []
    for raw in client.mget(keys) if keys else []:
        if raw is None:
            continue  # expired between the scan and the read
        beat = json.loads(raw)
        found.append(BeatState(str(beat["node"]), str(beat["hostname"]), int(beat["pid"]), str(beat["role"])))
    return sorted(found, key=lambda b: (b.role != ACTIVE, b.node))


class SingleBeatScheduler(Scheduler):
    """Celery's in-memory scheduler, sending only while this process holds the schedule's lock."""

    max_interval: float

    def __init__(self, app: Any, *args: Any, **kwargs: Any) -> None:
        # Imported here: `tideline health` and `tideline status` read this module's helpers without
        # the composition behind a beat (the store, the embedder).
        from workers.resources import resources_of

        resources = resources_of(app)
        self._redis: redis.Redis = resources.redis
        self._ttl = resources.settings.beat_lock_seconds
        self._node = node_name()
        self._holding = False
        self._refused_by: str | None = None
        super().__init__(app, *args, **kwargs)
        # Renewed on every tick: a tick must come well inside the lock's span.
        self.max_interval = min(float(self.max_interval), self._ttl / 3)

    @property
    def holding(self) -> bool:
        return self._holding

    def tick(self, *args: Any, **kwargs: Any) -> float:
        try:
            held = self._hold()
            self._announce()
        except redis.RedisError as exc:
            if self._holding:
                log.warning("beat %s lost the schedule: cannot reach Redis to renew its lock (%s)", self._node, exc)
            self._holding = False
            return self._ttl / 3
        if not held:
            return self._ttl / 3
        return float(super().tick(*args, **kwargs))

    def _hold(self) -> bool:
        """Renew the lock if this beat holds it, else try to take it; whether it is held now."""
        if self._holding:
            if locks.renew(self._redis, LOCK_KEY, self._node, self._ttl):
                return True
            self._holding = False
            log.warning("beat %s lost the schedule (its lock lapsed or was taken); standing by", self._node)
        if locks.take(self._redis, LOCK_KEY, self._node, self._ttl):
            self._holding = True
            self._refused_by = None
            self._take_over()
            return True
        holder = schedule_holder(self._redis)
        if holder != self._refused_by:
            self._refused_by = holder
            log.warning(
                "beat %s holds the schedule; %s sends nothing and stands by (taking over within %ds of it stopping)",
                holder,
                self._node,
                self._ttl,
            )
        return False

    def _take_over(self) -> None:
        """Start from when each entry last ran under any beat, so nothing is sent twice or skipped."""
        stored = {_text(name): _text(when) for name, when in self._redis.hgetall(LAST_RUN_KEY).items()}
        now = self.app.now()
        for name, entry in self.schedule.items():
            # An entry no beat has sent yet counts from now: a beat that stood by for days must not take
            # over with tonight's dream overdue.
            entry.last_run_at = datetime.fromisoformat(stored[name]) if name in stored else now
        self._heap = None  # rebuilt from the entries on the next tick
        log.info("beat %s holds the schedule (lock renewed every %.0fs)", self._node, self._ttl / 3)

    def reserve(self, entry: ScheduleEntry) -> ScheduleEntry:
        advanced = super().reserve(entry)
        # Written before the task is sent: a beat that takes over after a crash mid-send skips it rather
        # than sending it again (the reconciler runs again within a minute; tomorrow's dream covers tonight's).
        try:
            self._redis.hset(LAST_RUN_KEY, entry.name, advanced.last_run_at.isoformat())
        except redis.RedisError as exc:
            log.warning("beat %s could not record that %s ran: %s", self._node, entry.name, exc)
        return advanced

    def _announce(self) -> None:
        host, _, pid = self._node.rpartition("#")
        state = {"node": self._node, "hostname": host, "pid": int(pid), "role": ACTIVE if self._holding else STANDBY}
        self._redis.set(BEAT_PREFIX + self._node, json.dumps(state), ex=self._ttl)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._let_go()

    def _let_go(self) -> None:
        """Free the lock at once (a beat standing by takes over on its next try) and withdraw the announcement."""
        try:
            if self._holding:
                locks.let_go(self._redis, LOCK_KEY, self._node)
                log.info("beat %s released the schedule", self._node)
            self._redis.delete(BEAT_PREFIX + self._node)
        except redis.RedisError as exc:
            log.warning("beat %s could not release its lock (it lapses by itself): %s", self._node, exc)
        self._holding = False

    @property
    def info(self) -> str:
        return f"    . schedule -> one beat at a time (Redis lock {LOCK_KEY}, {self._ttl}s)"


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
