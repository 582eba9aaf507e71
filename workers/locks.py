"""The per-agent nightly dream lock in Redis (SET NX with expiry, compare-and-delete release).

The nightly chain holds it from its first stage to its last (released at the end, and by an
errback when a stage fails). Manual triggers (recluster, refresh, graph, scan) are *refused*
while it is held: the dispatcher checks before enqueueing, and the task checks again when it
starts, raising Conflict. Refusing rather than waiting keeps a manual job from sitting in the
dream queue for the hours a chain may take, and the chain runs every stage anyway.

Publishers (the job queue, the CLI) may import this module: it needs only redis-py.
"""

from __future__ import annotations

import redis

from tideline_core.errors import Conflict

PREFIX = "tideline:dream-lock:"
NIGHTLY = "nightly"

# Compare-and-delete / compare-and-expire: only the holder's token may release or extend the lock,
# so a chain whose lock expired and was taken by another run can never free that run's lock.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
_EXTEND = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('expire', KEYS[1], ARGV[2]) else return 0 end"
)


def redis_client_url(broker_url: str) -> str:
    """kombu's `redis+socket:///path` in the form redis-py understands (`unix:///path`)."""
    if broker_url.startswith("redis+socket://"):
        return "unix://" + broker_url[len("redis+socket://") :]
    if broker_url.startswith("socket://"):
        return "unix://" + broker_url[len("socket://") :]
    return broker_url


def lock_key(agent_id: str) -> str:
    return PREFIX + agent_id


def nightly_token(run_id: str) -> str:
    return f"{NIGHTLY}:{run_id}"


def acquire(client: redis.Redis, agent_id: str, token: str, ttl_seconds: int) -> bool:
    """Take the agent's lock for `token`; False when someone holds it."""
    return bool(client.set(lock_key(agent_id), token, nx=True, ex=ttl_seconds))


def holder(client: redis.Redis, agent_id: str) -> str | None:
    """The token holding the agent's lock, or None."""
    value = client.get(lock_key(agent_id))
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def extend(client: redis.Redis, agent_id: str, token: str, ttl_seconds: int) -> bool:
    """Reset the expiry if `token` still holds the lock."""
    return bool(client.eval(_EXTEND, 1, lock_key(agent_id), token, ttl_seconds))


def release(client: redis.Redis, agent_id: str, token: str) -> bool:
    """Free the lock if `token` holds it (idempotent: a second release is a no-op)."""
    return bool(client.eval(_RELEASE, 1, lock_key(agent_id), token))


def nightly_running_message(agent_id: str) -> str:
    return f"nightly dream for agent {agent_id} is running; try again later"


def refuse_while_nightly(client: redis.Redis, agent_id: str) -> None:
    """Raise Conflict when the agent's nightly chain holds the lock."""
    if holder(client, agent_id) is not None:
        raise Conflict(nightly_running_message(agent_id))
