"""Task chains, all in one file: the nightly dream of one agent as a chain of immutable signatures.

    nightly(agent) ── takes the agent's lock ──▶ each nightly stage's task (tideline.dream.<stage>), in registry order
                                                 → release_lock (any stage fails: the errback releases it)

The stages and their order come from `tideline_core.dream.registry`. Every stage signature carries
(agent_id, lock_token, day, run_key): the token proves the stage runs for the chain that holds the
lock (and extends it), the day files all stages of one night under the same dream_runs key even
when the chain crosses midnight. Signatures are built by task name, so this module never imports a task.
"""

from __future__ import annotations

from celery import Celery, chain
from celery.canvas import Signature
from celery.result import AsyncResult

from tideline_core.dream import nightly_stages
from tideline_core.dream.runner.runs import NIGHTLY
from tideline_core.settings import Settings
from workers.app import time_limits
from workers.queues import TaskName, stage_task

LOCK_MARGIN_SECONDS = 60


def nightly_lock_ttl(settings: Settings) -> int:
    """Longer than every stage of the chain (and the release) at its hard time limit.

    Each stage also resets the expiry when it starts, so a chain waiting in a busy dream queue
    keeps its lock as long as each wait-plus-stage fits in this span.
    """
    hard, _soft = time_limits(settings)
    return (len(nightly_stages()) + 1) * hard + LOCK_MARGIN_SECONDS


def release_signature(app: Celery, agent_id: str, token: str) -> Signature:
    return app.signature(str(TaskName.RELEASE_LOCK), kwargs={"agent_id": agent_id, "token": token}, immutable=True)


def nightly_chain(app: Celery, agent_id: str, token: str, day: str, run_key: str = NIGHTLY) -> Signature:
    """The stages in order, then the lock release; immutable, so no stage receives another's result."""
    stages = [
        app.signature(
            stage_task(stage.name),
            kwargs={"agent_id": agent_id, "lock_token": token, "day": day, "run_key": run_key},
            immutable=True,
        )
        for stage in nightly_stages()
    ]
    return chain(*stages, release_signature(app, agent_id, token), app=app)


def start_nightly(app: Celery, agent_id: str, token: str, day: str, run_key: str = NIGHTLY) -> AsyncResult:
    """Publish the chain; a failing stage stops it and the errback frees the lock (compare-and-delete)."""
    chained = nightly_chain(app, agent_id, token, day, run_key)
    return chained.apply_async(link_error=release_signature(app, agent_id, token))
