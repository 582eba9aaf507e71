"""The dream tools: memory_trigger starts a stage or the whole dream now; memory_dream_log shows runs and diffs."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

from mcp_server.context import AppContext
from mcp_server.models import DreamRun
from mcp_server.models_dream import DreamChange, DreamLog, DreamReview, Proposal, StageResult, TriggerResult
from mcp_server.tools._edge import READ, WRITE, offload, operation
from tideline_core.domain.inputs import DreamLogQuery, DreamReviewIn, TriggerIn
from tideline_core.dream import STAGES
from tideline_core.service import change_dict

# A trigger starts work that is recorded and can be undone (memory_dream_log, `tideline dream undo`);
# approving a proposal applies it the same way, and rejecting one discards it: each changes memories,
# so neither tool is read-only, but neither deletes anything (`WRITE`'s hints).
JOBS = ["dream", *(stage.name for stage in STAGES)]

# The jobs are the dream stages of tideline_core.dream.registry, whatever they are, and the whole dream.
JOB = {"job": {"enum": JOBS}}

TRIGGER_DESCRIPTION = (
    "Dream now instead of at night, whole or one stage (an LLM stage is skipped without an LLM); dry_run shows "
    "one stage's changes and writes nothing. Returns the task_id, state and, once finished, result or error."
)


@operation(TriggerIn, overrides=JOB)
async def memory_trigger(app: AppContext, agent: str, request: TriggerIn) -> TriggerResult:
    started = await offload(
        app.service.trigger_and_wait, agent, request.job, dry_run=request.dry_run, wait=request.wait
    )
    outcome = started.outcome
    result = TriggerResult(agent=agent, job=request.job, task_id=started.task_id, dry_run=request.dry_run)
    if outcome is None:
        return result
    finished = StageResult.of_task(outcome.value) if outcome.state == "finished" else None
    return result.model_copy(update={"state": outcome.state, "result": finished, "error": outcome.error or None})


@operation(DreamLogQuery)
async def memory_dream_log(app: AppContext, agent: str, query: DreamLogQuery) -> DreamLog:
    """See what your dream did: the latest stage runs, or every change of one run_id, before and after (`tideline
    dream undo RUN` reverts it). Returns runs and changes.
    """
    if query.run_id is not None:
        view = await offload(app.service.dream_run, agent, query.run_id)
        return DreamLog(
            agent=agent,
            runs=[DreamRun.model_validate(view.run)],
            changes=[DreamChange.model_validate(change_dict(c)) for c in view.changes],
        )
    runs = await offload(app.service.dream_log, agent, limit=query.limit, stage=query.stage)
    return DreamLog(agent=agent, runs=[DreamRun.model_validate(r) for r in runs])


@operation(DreamReviewIn)
async def memory_dream_review(app: AppContext, agent: str, request: DreamReviewIn) -> DreamReview:
    """Review your dream's proposals with your human before they land: approve one (applied, undoable) or reject it
    (never proposed again). Returns those waiting, with their changes.
    """
    if request.action == "list":
        views = await offload(app.service.dream_review, agent)
        return DreamReview(agent=agent, proposals=[_proposal(v.run, v.changes) for v in views])
    assert request.run_id is not None  # the model requires it to approve or reject
    if request.action == "approve":
        view = await offload(app.service.dream_approve, agent, request.run_id)
        return DreamReview(agent=agent, proposals=[_proposal(view.run, view.changes)])
    run = await offload(app.service.dream_reject, agent, request.run_id)
    return DreamReview(agent=agent, proposals=[_proposal(run, ())])


def _proposal(run: Any, changes: Any) -> Proposal:
    return Proposal(
        run=DreamRun.model_validate(run), changes=[DreamChange.model_validate(change_dict(c)) for c in changes]
    )


def register(server: MCPServer) -> None:
    server.add_tool(memory_trigger, title="Dream now", description=TRIGGER_DESCRIPTION, annotations=WRITE)
    server.add_tool(memory_dream_log, title="Dream log", annotations=READ)
    server.add_tool(memory_dream_review, title="Dream review", annotations=WRITE)
