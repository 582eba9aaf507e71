"""What a read tells its caller about rows meaning search cannot see yet, and whether anything will embed them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

INGEST_QUEUE = "ingest"


def embedding_notice(unembedded: int, workers: Mapping[str, Sequence[str]] | None) -> str | None:
    """None while an ingest worker is there to embed the waiting rows (or none wait); otherwise why they wait.

    `workers`: the live workers and their queues, None when the job queue cannot be reached.
    """
    if unembedded <= 0:
        return None
    rows = f"{unembedded} row{'s' if unembedded != 1 else ''} still without an embedding"
    missed = "meaning search cannot find them (keyword search can)"
    if workers is None:
        return (
            f"{rows}: the job queue (Redis) cannot be reached, so {missed}: run `tideline up` on this data dir "
            "(it starts Redis and the ingest worker), or point TIDELINE_REDIS_URL at a running Redis"
        )
    if any(INGEST_QUEUE in queues for queues in workers.values()):
        return None
    return (
        f"{rows} and no ingest worker is running, so {missed}: run `tideline up` "
        "(or `tideline worker ingest` with Redis) on this data dir"
    )


def other_agents_notice(agent: str, agents: Mapping[str, int], *, shown: int = 5) -> str | None:
    """None when `agent` holds memories; otherwise which agents here do, and how to act as one of them."""
    if agents.get(agent):
        return None
    if not agents:
        return f"agent {agent!r} has no memories, nor has any other agent in this store"
    listed = ", ".join(f"{name} ({n} rows)" for name, n in list(agents.items())[:shown])
    more = f" and {len(agents) - shown} more" if len(agents) > shown else ""
    return (
        f"agent {agent!r} has no memories; agents with memories here: {listed}{more} "
        "(choose one with --agent or TIDELINE_AGENT)"
    )
