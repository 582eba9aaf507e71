"""Dream-queue tasks of the script layer: recluster, refresh, entity graph, scan; the nightly chain and its fan-out.

Every stage loads fresh state, runs one organize function (an atomic swap) and is recorded in
`dream_runs`, so running it twice gives the same result. A stage triggered by hand is refused
(Conflict) while the agent's nightly chain holds the lock; a stage of the chain carries the
lock's token instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from celery import Task, shared_task

from tideline_core.errors import Conflict
from tideline_core.organize import clusters, graph, scan, weights
from tideline_core.scanner import to_markdown
from tideline_core.store.dream_runs import agents_with_narratives, day_of, fail_run, finish_run, start_run
from workers import locks, pipelines
from workers.queues import TaskName
from workers.resources import WorkerResources, resources_of
from workers.tasks.ingest import RETRY

log = logging.getLogger(__name__)

MAX_PROBLEMS = 20  # entity-parse problems listed in a result; the count covers all of them
Work = Callable[[WorkerResources], dict[str, Any]]


def _check_lock(resources: WorkerResources, agent_id: str, lock_token: str | None) -> None:
    if lock_token is None:
        locks.refuse_while_nightly(resources.redis, agent_id)
        return
    if not locks.extend(resources.redis, agent_id, lock_token, pipelines.nightly_lock_ttl(resources.settings)):
        raise Conflict(f"the nightly lock of agent {agent_id} is no longer held by this chain; stopping it here")


def _run_stage(
    task: Task, stage: str, agent_id: str, lock_token: str | None, day: str | None, work: Work
) -> dict[str, Any]:
    """Check the lock, record the stage running, do the work, record done (or failed, and re-raise)."""
    resources = resources_of(task.app)
    _check_lock(resources, agent_id, lock_token)
    day = day or day_of()
    inputs = {"trigger": "nightly" if lock_token else "manual", "task_id": task.request.id}
    with resources.db.write() as conn:
        start_run(conn, agent_id, day, stage, inputs)
    try:
        outputs = work(resources)
    except Exception as exc:  # recorded, then re-raised: the task still fails (and retries if transient)
        with resources.db.write() as conn:
            fail_run(conn, agent_id, day, stage, f"{type(exc).__name__}: {exc}")
        raise
    with resources.db.write() as conn:
        # The Markdown rendering is for the caller; the row keeps the figures.
        finish_run(conn, agent_id, day, stage, {k: v for k, v in outputs.items() if k != "markdown"})
    return {"agent_id": agent_id, "stage": stage, "day": day, **outputs}


# ----- the work of each stage (plain functions over the worker's resources) ----------------------


def _recluster(resources: WorkerResources, agent_id: str) -> dict[str, Any]:
    topics = clusters.rebuild_topics(resources.db, agent_id)
    outputs: dict[str, Any] = {"narratives": topics.narratives, "topic_clusters": topics.clusters}
    if not resources.embeds:
        return {**outputs, "soft_clusters": 0, "soft_clusters_skipped": "no embedder configured"}
    soft = clusters.rebuild_soft_clusters(resources.db, agent_id, resources.embedder.model)
    return {**outputs, "soft_clusters": soft.clusters, "embedded_narratives": soft.narratives}


def _refresh(resources: WorkerResources, agent_id: str) -> dict[str, Any]:
    report = weights.refresh_weights(resources.db, agent_id)
    return {"narratives": report.narratives, "changed": report.changed}


def _entity_graph(resources: WorkerResources, agent_id: str) -> dict[str, Any]:
    report = graph.rebuild_entity_graph(resources.db, agent_id, resources.settings.known_person_aliases())
    return {
        "nodes": report.nodes,
        "edges": report.edges,
        "problems": len(report.problems),
        "problem_samples": [
            {"narrative_id": p.narrative_id, "fragment": p.fragment, "reason": p.reason}
            for p in report.problems[:MAX_PROBLEMS]
        ],
    }


def _scan(resources: WorkerResources, agent_id: str) -> dict[str, Any]:
    # Backfill first, so track A lists only the narratives no conversation could be matched to.
    outputs: dict[str, Any] = {}
    if resources.embeds:
        backfill = scan.backfill_source_links(resources.db, agent_id, resources.embedder.model)
        outputs.update(backfill_considered=backfill.narratives_considered, links_inferred=backfill.links_added)
    report = scan.scan_agent(resources.db, agent_id)
    # The watermark is only proposed here: solidify advances it once its narratives are committed.
    return {
        **outputs,
        "unlinked": len(report.unlinked),
        "chunks": len(report.chunks),
        "short_chunks": len(report.short_chunks),
        "new_turns": report.new_turns,
        "narratives_waiting": report.narratives_waiting.count,
        "turns_waiting": report.turns_waiting.count,
        "watermark": report.watermark_before,
        "watermark_proposed": report.watermark,
        "markdown": to_markdown(report),
    }


# ----- the tasks ---------------------------------------------------------------------------------


@shared_task(bind=True, name=str(TaskName.RECLUSTER), **RETRY)
def recluster(self: Task, agent_id: str, lock_token: str | None = None, day: str | None = None) -> dict[str, Any]:
    """Rebuild the agent's topic clusters and (with an embedder) soft clusters."""
    return _run_stage(self, "recluster", agent_id, lock_token, day, partial(_recluster, agent_id=agent_id))


@shared_task(bind=True, name=str(TaskName.REFRESH), **RETRY)
def refresh(self: Task, agent_id: str, lock_token: str | None = None, day: str | None = None) -> dict[str, Any]:
    """Refresh recurrence from tags and recompute weights (with anti-inflation) for all the agent's narratives."""
    return _run_stage(self, "refresh", agent_id, lock_token, day, partial(_refresh, agent_id=agent_id))


@shared_task(bind=True, name=str(TaskName.ENTITY_GRAPH), **RETRY)
def entity_graph(self: Task, agent_id: str, lock_token: str | None = None, day: str | None = None) -> dict[str, Any]:
    """Rebuild the agent's entity graph from every narrative's entities_role and KNOWN_PERSONS."""
    return _run_stage(self, "entity_graph", agent_id, lock_token, day, partial(_entity_graph, agent_id=agent_id))


@shared_task(bind=True, name=str(TaskName.SCAN), **RETRY)
def scan_unindexed(self: Task, agent_id: str, lock_token: str | None = None, day: str | None = None) -> dict[str, Any]:
    """Backfill inferred source links, then scan tracks A–D; returns the figures and the Markdown report."""
    return _run_stage(self, "scan", agent_id, lock_token, day, partial(_scan, agent_id=agent_id))


@shared_task(bind=True, name=str(TaskName.NIGHTLY))
def nightly(self: Task, agent_id: str) -> dict[str, Any]:
    """Take the agent's nightly lock and start its chain; refused (Conflict) while another run holds it."""
    resources = resources_of(self.app)
    token = locks.nightly_token(str(self.request.id))
    if not locks.acquire(resources.redis, agent_id, token, pipelines.nightly_lock_ttl(resources.settings)):
        if locks.holder(resources.redis, agent_id) == token:
            # A redelivered message of this very run: its chain is already under way.
            return {"agent_id": agent_id, "started": False, "reason": "this run's chain was already started"}
        raise Conflict(locks.nightly_running_message(agent_id))
    day = day_of()
    try:
        result = pipelines.start_nightly(self.app, agent_id, token, day)
    except Exception:
        locks.release(resources.redis, agent_id, token)  # nothing was started: do not hold the agent for hours
        raise
    return {
        "agent_id": agent_id,
        "started": True,
        "day": day,
        "stages": [str(s) for s in pipelines.NIGHTLY_STAGES],
        "last_task_id": result.id,
    }


@shared_task(bind=True, name=str(TaskName.NIGHTLY_ALL))
def nightly_all(self: Task) -> dict[str, Any]:
    """Beat's nightly fan-out: one nightly chain for every agent that has narratives."""
    resources = resources_of(self.app)
    with resources.db.read() as conn:
        agents = agents_with_narratives(conn)
    started, running = [], []
    for agent_id in agents:
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
