"""Which workers are alive, and sending again the tasks a dead worker held, in Redis.

Every worker keeps a heartbeat key (`tideline:worker:<node>`, expiring after the liveness span,
`TIDELINE_WORKER_LIVENESS_SECONDS`) and records every task it receives — id, name, arguments and
what follows it in a chain — in its own set (`tideline:held:<node>`), dropping each once the result
backend says it finished. A record whose node has no heartbeat belongs to a worker that died
(killed, or its host gone) holding that task, which Redis would otherwise hand back only after its
visibility timeout (an hour by default). The sweep sends each such task again under the same id, so
an embed run takes over its own claims on the rows. Every worker sweeps at start and every half
span from its heartbeat thread, and the reconciler sweeps on beat, so a dead worker's tasks run
again within about one and a half spans (45 s by default) while any worker is up.

All of this rests on public behaviour: Celery's task ids and `send_task`, its result backend, and
redis-py's `Lock`. Every task is idempotent, so the original message that Redis redelivers after
the visibility timeout does no harm; and what a record misses (a worker killed between receiving a
task and recording it) the database still holds as pending work for the reconciler (the outbox).

The node name is the worker's host name and process id: a worker restarted under the same name
is a new node, and the old one's tasks are recognised as orphaned.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import redis

log = logging.getLogger(__name__)

ALIVE_PREFIX = "tideline:worker:"
HELD_PREFIX = "tideline:held:"
SWEEP_LOCK = "tideline:sweep-lock"
LIVENESS_SECONDS = 30  # the default span (TIDELINE_WORKER_LIVENESS_SECONDS)


@dataclass(frozen=True)
class HeldTask:
    """A task as a worker received it: enough to send it again under the same id."""

    id: str
    name: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)  # chain, callbacks, errbacks, root and parent ids

    def dumps(self) -> str:
        return json.dumps(
            {"id": self.id, "name": self.name, "args": self.args, "kwargs": self.kwargs, "options": self.options},
            sort_keys=True,
        )

    @staticmethod
    def loads(raw: bytes | str) -> HeldTask:
        item = json.loads(raw)
        return HeldTask(str(item["id"]), str(item["name"]), item["args"], item["kwargs"], item["options"])


Resend = Callable[[HeldTask], None]
Finished = Callable[[str], bool]  # whether the task of this id has finished (its result says so)


def node_name(hostname: str) -> str:
    return f"{hostname}#{os.getpid()}"


def live_workers(client: redis.Redis) -> dict[str, list[str]]:
    """Live workers by host name (as Celery names them) → the queues they take, merged over processes."""
    found: dict[str, set[str]] = {}
    keys = list(client.scan_iter(match=f"{ALIVE_PREFIX}*", count=200))
    for raw in client.mget(keys) if keys else []:
        if raw is None:
            continue  # expired between the scan and the read
        beat = json.loads(raw)
        found.setdefault(str(beat["hostname"]), set()).update(beat["queues"])
    return {host: sorted(queues) for host, queues in sorted(found.items())}


def sweep(client: redis.Redis, resend: Resend, span: float = LIVENESS_SECONDS) -> int:
    """Send again the tasks that workers now gone were holding; how many. One sweeper at a time."""
    # No waiting: another sweeper is doing this very work. The lock lapses by itself if its holder dies.
    lock = client.lock(SWEEP_LOCK, timeout=max(1.0, span / 2), blocking=False)
    if not lock.acquire():
        return 0
    try:
        live = {_decode(key)[len(ALIVE_PREFIX) :] for key in client.scan_iter(match=f"{ALIVE_PREFIX}*", count=200)}
        sent = 0
        for key in client.scan_iter(match=f"{HELD_PREFIX}*", count=200):
            if _decode(key)[len(HELD_PREFIX) :] in live:
                continue
            for raw in client.smembers(key):
                resend(HeldTask.loads(raw))
                client.srem(key, raw)  # one by one: a sweeper that dies midway leaves only what it has not sent
                sent += 1
            client.delete(key)
        if sent:
            log.warning("gave back %d task message(s) held by workers that are gone", sent)
        return sent
    finally:
        if lock.owned():
            lock.release()


class Heartbeat:
    """One worker's heartbeat and record of held tasks; sweeps for orphans as it beats."""

    def __init__(
        self,
        client: redis.Redis,
        hostname: str,
        queues: Iterable[str],
        resend: Resend,
        span: float = LIVENESS_SECONDS,
        finished: Finished | None = None,
    ) -> None:
        self.client = client
        self.span = span
        self.node = node_name(hostname)
        self._beat = json.dumps({"hostname": hostname, "queues": sorted(queues), "pid": os.getpid()})
        self._resend = resend
        self._finished = finished
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tideline-heartbeat", daemon=True)

    def start(self) -> None:
        self.client.set(ALIVE_PREFIX + self.node, self._beat, ex=max(1, int(self.span)))
        self._thread.start()

    def hold(self, task: HeldTask) -> None:
        self.client.sadd(HELD_PREFIX + self.node, task.dumps())

    def _run(self) -> None:
        last_sweep = time.monotonic()
        # Six beats a span: a few late beats (a busy machine) do not make a live worker look dead.
        while not self._stop.wait(self.span / 6):
            try:
                self.client.set(ALIVE_PREFIX + self.node, self._beat, ex=max(1, int(self.span)))
                if time.monotonic() - last_sweep >= self.span / 2:
                    last_sweep = time.monotonic()
                    self._prune()
                    sweep(self.client, self._resend, self.span)
            except redis.RedisError as exc:
                log.warning("heartbeat to the broker failed: %s", exc)

    def _prune(self) -> None:
        """Forget held tasks that finished, so the set stays small."""
        if self._finished is None:
            return
        key = HELD_PREFIX + self.node
        done = [raw for raw in self.client.smembers(key) if self._finished(HeldTask.loads(raw).id)]
        if done:
            self.client.srem(key, *done)

    def stop(self) -> None:
        self._stop.set()
        try:
            self.client.delete(ALIVE_PREFIX + self.node, HELD_PREFIX + self.node)
        except redis.RedisError as exc:
            log.warning("could not clear this worker's heartbeat: %s", exc)


def _decode(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
