"""Queues, task names and routes: the one place that says which work runs where.

Publishers (the job queue, the pipelines) import only this module, never the tasks.
"""

from __future__ import annotations

from enum import StrEnum

from tideline_core.dream import STAGES


class Queue(StrEnum):
    # Short tasks, many workers, any order: embeddings, attention logging, imports, reconciling.
    INGEST = "ingest"
    # Long tasks, one at a time per worker (prefetch 1): the dream stages and the nightly chain.
    DREAM = "dream"


class TaskName(StrEnum):
    EMBED_PENDING = "tideline.ingest.embed_pending"
    LOG_ATTENTION = "tideline.ingest.log_attention"
    RECONCILE = "tideline.ingest.reconcile"
    IMPORT_TURNS = "tideline.ingest.import_turns"
    # Any stage by name: what an earlier release published, still run; new messages use `stage_task`.
    RUN_STAGE = "tideline.dream.run_stage"
    NIGHTLY = "tideline.dream.nightly"
    NIGHTLY_ALL = "tideline.dream.nightly_all"
    RELEASE_LOCK = "tideline.dream.release_lock"
    BUILD_AGENT_INDEXES = "tideline.dream.build_agent_indexes"


QUEUE_OF: dict[TaskName, Queue] = {
    TaskName.EMBED_PENDING: Queue.INGEST,
    TaskName.LOG_ATTENTION: Queue.INGEST,
    TaskName.RECONCILE: Queue.INGEST,
    TaskName.IMPORT_TURNS: Queue.INGEST,
    TaskName.RUN_STAGE: Queue.DREAM,
    TaskName.NIGHTLY: Queue.DREAM,
    TaskName.NIGHTLY_ALL: Queue.DREAM,
    TaskName.RELEASE_LOCK: Queue.DREAM,
    TaskName.BUILD_AGENT_INDEXES: Queue.DREAM,
}


def stage_task(stage: str) -> str:
    """The task that runs dream stage `stage`: Flower shows each stage under its own name."""
    return f"tideline.dream.{stage}"


# One task per stage of tideline_core.dream.registry, in its order.
STAGE_TASKS: dict[str, str] = {stage.name: stage_task(stage.name) for stage in STAGES}
if clash := set(STAGE_TASKS.values()) & {str(name) for name in TaskName}:
    raise RuntimeError(f"a dream stage is named like another task: {sorted(clash)}")

ROUTES: dict[str, dict[str, str]] = {
    **{str(name): {"queue": str(queue)} for name, queue in QUEUE_OF.items()},
    **{name: {"queue": str(Queue.DREAM)} for name in STAGE_TASKS.values()},
}
