"""Which workers are alive, and giving back the messages a dead worker held, in Redis.

Every worker keeps a heartbeat key (`tideline:worker:<node>`, expiring after the liveness span,
`TIDELINE_WORKER_LIVENESS_SECONDS`)
and records the delivery tag of every task message it receives in its own set
(`tideline:held:<node>`). A message stays in kombu's `unacked` hash from delivery until its
ack (tasks ack late). So a message that has been unacked for longer than the liveness span and
is held by no live worker was taken by a worker that died — killed, or its host gone — and
would otherwise wait for Redis's visibility timeout (an hour by default). The sweep puts it
back on its queue. Every worker sweeps at start and every half span from its heartbeat thread,
and the reconciler sweeps on beat, so a dead worker's tasks run again within about one and a half
spans (45 s by default) while any worker is up.

The node name is the worker's host name and process id: a worker restarted under the same name
is a new node, and the old one's messages are recognised as orphaned.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping

import redis

log = logging.getLogger(__name__)

ALIVE_PREFIX = "tideline:worker:"
HELD_PREFIX = "tideline:held:"
SWEEP_LOCK = "tideline:sweep-lock"
LIVENESS_SECONDS = 30  # the default span (TIDELINE_WORKER_LIVENESS_SECONDS)
UNACKED_INDEX = "unacked_index"  # kombu's Redis transport keys (no global key prefix is configured)

Restore = Callable[[str], None]


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


def orphans(unacked: Mapping[str, float], held_by_live: Iterable[str], now: float, span: float) -> list[str]:
    """Delivery tags unacked for at least `span` seconds that no live worker holds, oldest first.

    A younger message may belong to a worker that received it a moment ago and has not recorded it yet.
    """
    held = set(held_by_live)
    aged = [(since, tag) for tag, since in unacked.items() if now - since >= span and tag not in held]
    return [tag for _, tag in sorted(aged)]


def sweep(client: redis.Redis, restore: Restore, span: float = LIVENESS_SECONDS, now: float | None = None) -> int:
    """Give back to their queues the messages of dead workers; how many. One sweeper at a time."""
    if not client.set(SWEEP_LOCK, "1", nx=True, ex=max(1, int(span / 2))):
        return 0
    try:
        live = {_decode(key)[len(ALIVE_PREFIX) :] for key in client.scan_iter(match=f"{ALIVE_PREFIX}*", count=200)}
        held: set[str] = set()
        for key in client.scan_iter(match=f"{HELD_PREFIX}*", count=200):
            node = _decode(key)[len(HELD_PREFIX) :]
            if node in live:
                held.update(_decode(tag) for tag in client.smembers(key))
            else:
                client.delete(key)  # a dead worker's record: its messages are judged by age from now on
        scored: list[tuple[bytes, float]] = client.zrange(UNACKED_INDEX, 0, -1, withscores=True)  # type: ignore[assignment]
        unacked = {_decode(tag): float(score) for tag, score in scored}
        found = orphans(unacked, held, time.time() if now is None else now, span)
        for tag in found:
            restore(tag)
        if found:
            log.warning("gave back %d task message(s) held by workers that are gone", len(found))
        return len(found)
    finally:
        client.delete(SWEEP_LOCK)


class Heartbeat:
    """One worker's heartbeat and record of held messages; sweeps for orphans as it beats."""

    def __init__(
        self,
        client: redis.Redis,
        hostname: str,
        queues: Iterable[str],
        restore: Restore,
        span: float = LIVENESS_SECONDS,
    ) -> None:
        self.client = client
        self.span = span
        self.node = node_name(hostname)
        self._beat = json.dumps({"hostname": hostname, "queues": sorted(queues), "pid": os.getpid()})
        self._restore = restore
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tideline-heartbeat", daemon=True)

    def start(self) -> None:
        self.client.set(ALIVE_PREFIX + self.node, self._beat, ex=max(1, int(self.span)))
        self._thread.start()

    def hold(self, delivery_tag: str) -> None:
        self.client.sadd(HELD_PREFIX + self.node, delivery_tag)

    def _run(self) -> None:
        last_sweep = time.monotonic()
        # Six beats a span: a few late beats (a busy machine) do not make a live worker look dead.
        while not self._stop.wait(self.span / 6):
            try:
                self.client.set(ALIVE_PREFIX + self.node, self._beat, ex=max(1, int(self.span)))
                if time.monotonic() - last_sweep >= self.span / 2:
                    last_sweep = time.monotonic()
                    self._prune()
                    sweep(self.client, self._restore, self.span)
            except redis.RedisError as exc:
                log.warning("heartbeat to the broker failed: %s", exc)

    def _prune(self) -> None:
        """Forget held messages that were acked (no longer unacked), so the set stays small."""
        key = HELD_PREFIX + self.node
        tags = [_decode(tag) for tag in self.client.smembers(key)]
        if tags:
            scores = self.client.zmscore(UNACKED_INDEX, tags)
            done = [tag for tag, score in zip(tags, scores, strict=True) if score is None]
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
