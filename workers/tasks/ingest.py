"""Ingest-queue tasks: embed pending rows, log attention, import sessions, reconcile the outbox."""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from celery import Task, shared_task

from tideline_core import ingest
from tideline_core.errors import InvalidInput, TransientError
from tideline_core.inputs import ContextTurnIn, parse
from tideline_core.store.attention import log_hits
from tideline_core.store.dream_runs import expire_running
from tideline_core.store.imports import import_turns_once
from tideline_core.store.vectors import pending_agents
from tideline_core.timeutil import parse_instant, utcnow
from workers.app import time_limits
from workers.queues import TaskName
from workers.resources import resources_of

log = logging.getLogger(__name__)

# Retry only what may pass on its own (embedder down, broker hiccup), with exponential backoff and jitter.
RETRY: dict[str, Any] = {
    "autoretry_for": (TransientError,),
    "retry_backoff": 2,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 6,
}
# Batches per embed task; more pending work continues in a fresh task, so no task nears its time limit.
MAX_BATCHES = 8
MAX_IMPORT_TURNS = 5_000
STAGE_MARGIN_SECONDS = 60  # past a dream stage's hard limit, so a stage being killed right now is not raced


def _continue_embedding(task: Task, agent_id: str) -> None:
    task.app.send_task(str(TaskName.EMBED_PENDING), kwargs={"agent_id": agent_id})


@shared_task(bind=True, name=str(TaskName.EMBED_PENDING), **RETRY)
def embed_pending(self: Task, agent_id: str) -> dict[str, Any]:
    """Embed the agent's pending narratives and turns in batches (idempotent: saving is an upsert)."""
    resources = resources_of(self.app)
    if not resources.embeds:
        return {"embedded": 0, "skipped": "no embedder configured"}
    report = ingest.embed_pending(
        resources.db,
        resources.embedder,
        agent_id=agent_id,
        batch_size=resources.settings.embed_batch_size,
        max_batches=MAX_BATCHES,
    )
    if report.remaining:
        _continue_embedding(self, agent_id)
    return asdict(report)


@shared_task(bind=True, name=str(TaskName.LOG_ATTENTION), **RETRY)
def log_attention(
    self: Task, agent_id: str, hits: list[list[Any]], source: str, at: str | None = None
) -> dict[str, int]:
    """Record retrieval hits [(narrative id, similarity), ...]; `at` (ISO time of the retrieval) makes it idempotent."""
    when = parse_instant(at, "at") if at else utcnow()
    pairs = []
    for i, hit in enumerate(hits):
        if not isinstance(hit, list | tuple) or len(hit) != 2:
            raise InvalidInput(f"hits[{i}]", "must be a pair [narrative_id, similarity]")
        pairs.append((int(hit[0]), float(hit[1])))
    resources = resources_of(self.app)
    with resources.db.write() as conn:
        logged = log_hits(conn, agent_id, pairs, source, when)
    return {"logged": logged}


@shared_task(bind=True, name=str(TaskName.IMPORT_TURNS), **RETRY)
def import_turns(
    self: Task, agent_id: str, turns: list[dict[str, Any]], import_id: str | None = None
) -> dict[str, Any]:
    """Store a whole session's turns at once (validated first; all or nothing; once per import id)."""
    if len(turns) > MAX_IMPORT_TURNS:
        raise InvalidInput("turns", f"at most {MAX_IMPORT_TURNS} turns per import, got {len(turns)}")
    validated: list[ContextTurnIn] = []
    for i, turn in enumerate(turns):
        try:
            validated.append(parse(ContextTurnIn, turn))
        except InvalidInput as exc:
            raise InvalidInput(f"turns[{i}].{exc.field}", exc.rule) from None
    key = import_id or str(self.request.id)
    resources = resources_of(self.app)
    with resources.db.write() as conn:
        ids = import_turns_once(conn, agent_id, key, validated)
    if ids:
        _continue_embedding(self, agent_id)
    return {"import_id": key, "imported": len(ids or []), "already_imported": ids is None}


@shared_task(bind=True, name=str(TaskName.RECONCILE), **RETRY)
def reconcile(self: Task) -> dict[str, Any]:
    """The outbox sweep: enqueue embedding for rows pending past the grace period; close abandoned dream runs."""
    resources = resources_of(self.app)
    hard, _soft = time_limits(resources.settings)
    with resources.db.write() as conn:
        interrupted = expire_running(conn, started_before=utcnow() - timedelta(seconds=hard + STAGE_MARGIN_SECONDS))
    if interrupted:
        log.warning("reconcile: %d dream stage(s) outlived their time limit; marked failed", interrupted)
    if not resources.embeds:
        return {"agents": [], "interrupted_dream_stages": interrupted}
    older_than = utcnow() - timedelta(seconds=resources.settings.reconcile_grace_seconds)
    with resources.db.read() as conn:
        waiting = pending_agents(conn, older_than=older_than)
    agents = sorted({agent for _kind, agent, _count in waiting})
    for agent in agents:
        _continue_embedding(self, agent)
    if agents:
        log.info("reconcile: re-enqueued embedding for %d agent(s)", len(agents))
    return {
        "agents": agents,
        "pending": sum(count for _kind, _agent, count in waiting),
        "interrupted_dream_stages": interrupted,
    }
