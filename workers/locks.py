"""The per-agent nightly dream lock in Redis, on redis-py's `Lock` (tokened, with an expiry, never blocking).

The nightly chain holds it from its first stage to its last (released at the end, and by an
errback when a stage fails). Manual triggers (recluster, refresh, graph, scan) are *refused*
while it is held: the dispatcher checks before enqueueing, and the task checks again when it
starts, raising Conflict. Refusing rather than waiting keeps a manual job from sitting in the
dream queue for the hours a chain may take, and the chain runs every stage anyway.

Publishers (the job queue, the CLI) may import this module: it needs only redis-py.
"""

from __future__ import annotations

import redis
from redis.exceptions import LockNotOwnedError
from redis.lock import Lock

from tideline_core.errors import Conflict

PREFIX = "tideline:dream-lock:"
NIGHTLY = "nightly"


def held_by(client: redis.Redis, key: str, token: str, ttl_seconds: float | None = None) -> Lock:
    """redis-py's lock on `key` as `token` holds it, whichever process or thread took it.

    The nightly lock is taken by one task and extended and released by others (and beat's by the one
    beat, across its ticks), so the token travels with the work rather than living in the `Lock`
    that took it: only the holder's token may extend or release, so a run whose lock lapsed and was
    taken by another can never free that run's lock.
    """
    lock = client.lock(key, timeout=ttl_seconds, blocking=False, thread_local=False)
    lock.local.token = client.get_encoder().encode(token)
    return lock


def take(client: redis.Redis, key: str, token: str, ttl_seconds: float) -> bool:
    """Take `key` for `token` if nobody holds it."""
    return bool(client.lock(key, timeout=ttl_seconds, blocking=False, thread_local=False).acquire(token=token))


def renew(client: redis.Redis, key: str, token: str, ttl_seconds: float) -> bool:
    """Reset the expiry to `ttl_seconds` if `token` still holds `key`."""
    try:
        return bool(held_by(client, key, token, ttl_seconds).extend(ttl_seconds, replace_ttl=True))
    except LockNotOwnedError:
        return False


def let_go(client: redis.Redis, key: str, token: str) -> bool:
    """Free `key` if `token` holds it (a second call is a no-op)."""
    try:
        held_by(client, key, token).release()
    except LockNotOwnedError:
        return False
    return True


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
    return take(client, lock_key(agent_id), token, ttl_seconds)


def holder(client: redis.Redis, agent_id: str) -> str | None:
    """The token holding the agent's lock, or None."""
    value = client.get(lock_key(agent_id))
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def extend(client: redis.Redis, agent_id: str, token: str, ttl_seconds: int) -> bool:
    """Reset the expiry if `token` still holds the lock."""
    return renew(client, lock_key(agent_id), token, ttl_seconds)


def release(client: redis.Redis, agent_id: str, token: str) -> bool:
    """Free the lock if `token` holds it (idempotent: a second release is a no-op)."""
    return let_go(client, lock_key(agent_id), token)


def nightly_running_message(agent_id: str) -> str:
    return f"nightly dream for agent {agent_id} is running; try again later"


def refuse_while_nightly(client: redis.Redis, agent_id: str) -> None:
    """Raise Conflict when the agent's nightly chain holds the lock."""
    if holder(client, agent_id) is not None:
        raise Conflict(nightly_running_message(agent_id))
