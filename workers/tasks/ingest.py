"""Ingest-queue tasks: embed pending rows, log attention, import sessions, reconcile the outbox."""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from celery import Task, shared_task

from tideline_core.domain.inputs import ContextTurnIn, parse
from tideline_core.errors import InvalidInput, TransientError
from tideline_core.text.dates import parse_instant, utcnow
from workers.app import give_back, ingest_time_limits, time_limits
from workers.jobqueue import embed_mark
from workers.liveness import sweep
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


@shared_task(bind=True, name=str(TaskName.EMBED_PENDING), **RETRY)
def embed_pending(self: Task, agent_id: str) -> dict[str, Any]:
    """Embed the agent's pending narratives and turns in batches (idempotent: saving is an upsert)."""
    resources = resources_of(self.app)
    # Running now: a row written from here on asks for a job of its own (see CeleryJobQueue.embed).
    resources.redis.delete(embed_mark(agent_id))
    service = resources.service
    if not service.embeds:
        return {"embedded": 0, "skipped": "no embedder configured"}
    # Half the soft limit: the batch under way when it runs out still ends well before the limit would cut
    # it off in the middle of a save (the rest continues in a fresh task).
    budget = ingest_time_limits(resources.settings)[1] / 2
    report = service.embed_pending(
        agent_id,
        batch_size=resources.settings.embed_batch_size,
        max_batches=MAX_BATCHES,
        token=str(self.request.id),
        budget_seconds=budget,
    )
    return asdict(report)


@shared_task(bind=True, name=str(TaskName.LOG_ATTENTION), **RETRY)
def log_attention(
    self: Task, agent_id: str, hits: list[list[Any]], source: str, at: str | None = None
) -> dict[str, int]:
    """Record retrieval hits [(narrative id, similarity or null)]; `at` (ISO time of retrieval) keeps it idempotent."""
    when = parse_instant(at, "at") if at else utcnow()
    pairs = []
    for i, hit in enumerate(hits):
        if not isinstance(hit, list | tuple) or len(hit) != 2:
            raise InvalidInput(f"hits[{i}]", "must be a pair [narrative_id, similarity]")
        pairs.append((int(hit[0]), None if hit[1] is None else float(hit[1])))
    return {"logged": resources_of(self.app).service.log_attention(agent_id, pairs, source, when)}


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
    report = resources_of(self.app).service.import_turns(agent_id, validated, import_id or str(self.request.id))
    return asdict(report)


@shared_task(bind=True, name=str(TaskName.RECONCILE), **RETRY)
def reconcile(self: Task) -> dict[str, Any]:
    """The outbox sweep: enqueue embedding for rows pending past the grace period; close abandoned dream runs;
    give back the task messages of workers that died holding them."""
    resources = resources_of(self.app)
    gave_back = sweep(resources.redis, give_back(self.app), resources.settings.worker_liveness_seconds)
    hard, _soft = time_limits(resources.settings)
    now = utcnow()
    report = resources.service.reconcile(
        pending_before=now - timedelta(seconds=resources.settings.reconcile_grace_seconds),
        stale_stages_before=now - timedelta(seconds=hard + STAGE_MARGIN_SECONDS),
    )
    if report.interrupted_dream_stages:
        log.warning(
            "reconcile: %d dream stage(s) outlived their time limit; marked failed", report.interrupted_dream_stages
        )
    if report.agents:
        log.info("reconcile: re-enqueued embedding for %d agent(s)", len(report.agents))
    return {**asdict(report), "agents": list(report.agents), "messages_given_back": gave_back}
