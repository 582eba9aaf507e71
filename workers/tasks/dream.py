"""Dream-queue tasks: one task per dream stage (`tideline.dream.<stage>`), the nightly chain, its fan-out, its lock.

The stages themselves are named in `tideline_core.dream.registry`; a task is registered here for
each. A stage triggered by hand is refused (Conflict) while the agent's nightly chain holds the
lock; a stage of the chain carries the lock's token instead, and extends the lock as it starts.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task

from tideline_core.dream import nightly_stages
from tideline_core.dream.runner.runs import NIGHTLY, WHOLE_DREAM, day_of
from tideline_core.errors import Conflict
from workers import locks, pipelines
from workers.queues import STAGE_TASKS, TaskName
from workers.resources import WorkerResources, resources_of
from workers.tasks.ingest import RETRY

log = logging.getLogger(__name__)


def _check_lock(resources: WorkerResources, agent_id: str, lock_token: str | None) -> None:
    if lock_token is None:
        locks.refuse_while_nightly(resources.redis, agent_id)
        return
    if not locks.extend(resources.redis, agent_id, lock_token, pipelines.nightly_lock_ttl(resources.settings)):
        raise Conflict(f"the nightly lock of agent {agent_id} is no longer held by this chain; stopping it here")


def _run_stage(
    self: Task,
    stage: str,
    agent_id: str,
    lock_token: str | None = None,
    day: str | None = None,
    run_key: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Run one dream stage for the agent, recorded in dream_runs with its changes (a dry run records nothing)."""
    resources = resources_of(self.app)
    _check_lock(resources, agent_id, lock_token)
    # The beat's chain is "nightly"; a stage or a whole dream started by hand (its own run key) is "manual".
    nightly = lock_token is not None and run_key in (None, NIGHTLY)
    return resources.service.run_stage(
        stage,
        agent_id,
        day=day,
        trigger="nightly" if nightly else "manual",
        task_id=str(self.request.id),
        run_key=run_key,
        dry_run=dry_run,
    )


def _stage_task(stage: str) -> Task:
    def run(self: Task, agent_id: str, lock_token: str | None = None, day: str | None = None,
            run_key: str | None = None, dry_run: bool = False) -> dict[str, Any]:  # fmt: skip
        return _run_stage(self, stage, agent_id, lock_token, day, run_key, dry_run)

    run.__name__ = run.__qualname__ = stage
    run.__doc__ = f"The {stage} dream stage for the agent, recorded in dream_runs (a dry run records nothing)."
    task: Task = shared_task(bind=True, name=STAGE_TASKS[stage], **RETRY)(run)
    return task


STAGE_TASK_OF: dict[str, Task] = {stage: _stage_task(stage) for stage in STAGE_TASKS}


@shared_task(bind=True, name=str(TaskName.RUN_STAGE), **RETRY)
def run_stage(
    self: Task,
    stage: str,
    agent_id: str,
    lock_token: str | None = None,
    day: str | None = None,
    run_key: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Any stage by name: a message an earlier release published before an upgrade still runs."""
    return _run_stage(self, stage, agent_id, lock_token, day, run_key, dry_run)


@shared_task(bind=True, name=str(TaskName.NIGHTLY))
def nightly(self: Task, agent_id: str, manual: bool = False) -> dict[str, Any]:
    """Take the agent's nightly lock and start its chain; refused (Conflict) while another run holds it.

    The beat's run is keyed "nightly": a stage it already finished that day is not run again. A dream
    started by hand (`manual`) is keyed by this task's id, so it runs every stage now, as its own runs.
    """
    resources = resources_of(self.app)
    token = locks.nightly_token(str(self.request.id))
    if not locks.acquire(resources.redis, agent_id, token, pipelines.nightly_lock_ttl(resources.settings)):
        if locks.holder(resources.redis, agent_id) == token:
            # A redelivered message of this very run: its chain is already under way.
            return {"agent_id": agent_id, "started": False, "reason": "this run's chain was already started"}
        raise Conflict(locks.nightly_running_message(agent_id))
    day = day_of()
    run_key = f"{WHOLE_DREAM}{self.request.id}" if manual else NIGHTLY
    try:
        result = pipelines.start_nightly(self.app, agent_id, token, day, run_key)
    except Exception:
        locks.release(resources.redis, agent_id, token)  # nothing was started: do not hold the agent for hours
        raise
    return {
        "agent_id": agent_id,
        "started": True,
        "day": day,
        "run_key": run_key,
        "stages": [stage.name for stage in nightly_stages()],
        "last_task_id": result.id,
    }


@shared_task(bind=True, name=str(TaskName.NIGHTLY_ALL))
def nightly_all(self: Task) -> dict[str, Any]:
    """Beat's nightly fan-out: one nightly chain for every agent that has narratives."""
    resources = resources_of(self.app)
    started, running = [], []
    for agent_id in resources.service.dreaming_agents():
        if locks.holder(resources.redis, agent_id) is not None:
            running.append(agent_id)  # last night's chain still runs; starting another would only be refused
            continue
        self.app.send_task(str(TaskName.NIGHTLY), kwargs={"agent_id": agent_id})
        started.append(agent_id)
    if running:
        log.warning("nightly dream still running for %s; not started again", ", ".join(running))
    return {"started": started, "already_running": running}


@shared_task(bind=True, name=str(TaskName.RELEASE_LOCK), **RETRY)
def release_lock(self: Task, agent_id: str, token: str) -> dict[str, Any]:
    """End of the chain (or its errback): free the agent's lock if this chain still holds it."""
    released = locks.release(resources_of(self.app).redis, agent_id, token)
    return {"agent_id": agent_id, "released": released}


@shared_task(bind=True, name=str(TaskName.BUILD_AGENT_INDEXES))
def build_agent_indexes(self: Task) -> dict[str, Any]:
    """Beat's periodic check (PostgreSQL): indexes of its own for every agent's view grown large enough."""
    return {"built": resources_of(self.app).service.build_agent_indexes()}
