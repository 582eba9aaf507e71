"""The server's only door to the workers: typed enqueue_* calls that never block or fail a write.

A publish that cannot reach the broker is logged and dropped: the row it was about is already
committed with its work marked pending, and the reconciler on beat re-enqueues it later (outbox).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Dispatcher(Protocol):
    def enqueue_embed(self, agent_id: str) -> bool:
        """Ask the ingest queue to embed the agent's pending rows. False when the broker is unreachable."""
        ...

    def enqueue_attention(self, agent_id: str, hits: Sequence[tuple[int, float]], source: str) -> bool:
        """Log retrieval hits (narrative id, similarity) through the ingest queue."""
        ...

    def enqueue_trigger(self, agent_id: str, job: str) -> str | None:
        """Start a dream-queue job by name (recluster, refresh, graph, scan); returns the task id."""
        ...

    def queue_depths(self) -> dict[str, int] | None:
        """Messages waiting per queue, or None when the broker is unreachable."""
        ...

    def workers(self) -> dict[str, list[str]] | None:
        """Live workers and the queues each consumes, or None when the broker is unreachable."""
        ...


class NullDispatcher:
    """For processes with no broker (evaluation, one-shot scripts): enqueues nothing, says so."""

    def enqueue_embed(self, agent_id: str) -> bool:
        return False

    def enqueue_attention(self, agent_id: str, hits: Sequence[tuple[int, float]], source: str) -> bool:
        return False

    def enqueue_trigger(self, agent_id: str, job: str) -> str | None:
        return None

    def queue_depths(self) -> dict[str, int] | None:
        return None

    def workers(self) -> dict[str, list[str]] | None:
        return None
