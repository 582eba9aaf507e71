"""The dream tools: memory_trigger starts a stage or the whole dream now; memory_dream_log shows runs and diffs."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

from mcp_server.context import AppContext
from mcp_server.models import DreamRun
from mcp_server.models_dream import DreamChange, DreamLog, StageResult, TriggerResult
from mcp_server.tools._edge import READ, offload, operation
from tideline_core.domain.inputs import DreamLogQuery, TriggerIn
from tideline_core.dream import STAGES
from tideline_core.service import change_dict

# A trigger starts work that is recorded and can be undone (memory_dream_log, `tideline dream undo`);
# a stage changes memories, so the tool is not read-only, but it deletes nothing.
TRIGGER = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
JOBS = ["dream", *(stage.name for stage in STAGES)]

# The jobs are the dream stages of tideline_core.dream.registry, whatever they are, and the whole dream.
JOB = {"job": {"enum": JOBS}}

TRIGGER_DESCRIPTION = (
    "Start your dream, or one stage, now instead of at night (a stage needing an LLM is skipped without one); "
    "dry_run shows what one stage would change and writes nothing. Returns the `task_id`, `state` and, once "
    "finished, the `result` or `error`."
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
    """See what your dream did: the latest stage runs, or with `run_id` every change of one run, before and after
    (`tideline dream undo RUN` reverts it). Returns `runs` and `changes`.
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


def register(server: MCPServer) -> None:
    server.add_tool(memory_trigger, title="Dream now", description=TRIGGER_DESCRIPTION, annotations=TRIGGER)
    server.add_tool(memory_dream_log, title="Dream log", annotations=READ)
