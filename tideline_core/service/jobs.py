"""The job queue the service hands derived work to: this Protocol, with Celery's implementation in `workers`.

Every call returns at once and never fails a write: a row the service committed stays pending
when the queue is unreachable, and the reconciler asks for its work again later (the outbox).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

TaskState = Literal["queued", "running", "retrying", "finished", "failed"]


@dataclass(frozen=True)
class TaskResult:
    """Where a task stands: its result once finished, its error once failed."""

    state: TaskState
    value: Any = None  # what the task returned (JSON values), once finished
    error: str = ""  # why it failed


class JobQueue(Protocol):
    def embed(self, agent_id: str, *, again: bool = False) -> bool:
        """Ask for the agent's pending rows to be embedded; False when the queue is unreachable.

        At most one embed job per agent waits in the queue (a job takes every pending row, so a second
        would find nothing): while one waits this returns True at once. `again` asks even so.
        """
        ...

    def log_attention(self, agent_id: str, hits: Sequence[tuple[int, float | None]], source: str) -> bool:
        """Ask for retrieval hits (narrative id, similarity) to be logged; False when unreachable."""
        ...

    def start_stage(self, agent_id: str, stage: str, *, dry_run: bool = False) -> str | None:
        """Run a dream stage for the agent now (or dry: nothing written): its task id, or None when the
        queue is unreachable.

        Raises Conflict while the agent's nightly dream runs (it runs every stage anyway).
        """
        ...

    def start_dream(self, agent_id: str) -> str | None:
        """Run the agent's whole dream now (every nightly stage, in order, under its lock): the task id of the
        run that starts the chain, or None when the queue is unreachable. Raises Conflict while one runs."""
        ...

    def task_result(self, task_id: str, wait: float) -> TaskResult | None:
        """The task's result, waiting up to `wait` seconds for it to finish (its state so far when it has
        not); None when the queue is unreachable."""
        ...

    def queue_depths(self) -> dict[str, int] | None:
        """Jobs waiting per queue, or None when the queue is unreachable."""
        ...

    def workers(self) -> dict[str, list[str]] | None:
        """Live workers and the queues each takes, or None when unknown."""
        ...


class NullJobQueue:
    """For processes with no queue (evaluation, one-shot scripts): takes nothing and says so."""

    def embed(self, agent_id: str, *, again: bool = False) -> bool:
        return False

    def log_attention(self, agent_id: str, hits: Sequence[tuple[int, float | None]], source: str) -> bool:
        return False

    def start_stage(self, agent_id: str, stage: str, *, dry_run: bool = False) -> str | None:
        return None

    def start_dream(self, agent_id: str) -> str | None:
        return None

    def task_result(self, task_id: str, wait: float) -> TaskResult | None:
        return None

    def queue_depths(self) -> dict[str, int] | None:
        return None

    def workers(self) -> dict[str, list[str]] | None:
        return None
