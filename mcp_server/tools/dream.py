"""The dream tools: memory_trigger starts a stage or the whole dream now; memory_dream_log shows runs and diffs."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations

from mcp_server.models import DreamRun
from mcp_server.models_dream import DreamChange, DreamLog, StageResult, TriggerResult
from mcp_server.tools._edge import READ, app_of, described, given, offload, spec, tool_errors
from tideline_core.dream import STAGES
from tideline_core.inputs import DreamLogQuery, TriggerIn, parse
from tideline_core.service import change_dict

# A trigger starts work that is recorded and can be undone (memory_dream_log, `tideline dream undo`);
# a stage changes memories, so the tool is not read-only, but it deletes nothing.
TRIGGER = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
JOBS = ["dream", *(stage.name for stage in STAGES)]

# The jobs are the dream stages of tideline_core.dream.registry, whatever they are, and the whole dream.
Job = Annotated[
    Any,
    described(
        {"type": "string", "enum": JOBS},
        "The job: dream (every nightly stage, in order), or one stage: "
        + "; ".join(f"{stage.name} ({stage.summary})" for stage in STAGES)
        + ".",
    ),
]
DryRun = Annotated[
    Any, spec(TriggerIn, "dry_run", "true: compute the stage's changes and write nothing (one stage, not dream).")
]
Wait = Annotated[
    Any,
    spec(TriggerIn, "wait", "Seconds to wait for one stage's result, 0–300 (default: 60 for a dry run, 0 otherwise)."),
]
Limit = Annotated[Any, spec(DreamLogQuery, "limit", "How many runs, newest first, integer 1–200 (default 20).")]
Stage = Annotated[Any, spec(DreamLogQuery, "stage", "Only runs of this stage.")]
RunId = Annotated[Any, spec(DreamLogQuery, "run_id", "One run (its id from the list): every change it applied.")]

TRIGGER_DESCRIPTION = (
    "Start your dream, or one of its stages, now instead of waiting for the night.\n\n"
    "Jobs:\n- dream: every nightly stage below, in order\n"
    + "".join(f"- {stage.name}: {stage.summary}\n" for stage in STAGES)
    + "\nThe job runs in the background. Each stage's run, its figures and the changes it applied appear in "
    "memory_dream_log (and memory_status). Stages marked LLM are skipped, saying why, when no LLM is configured. "
    "With dry_run (one stage) nothing is written or recorded: this waits for the stage and returns the changes "
    "it would make. With `wait`, it waits that long for one stage's result. Refused while your nightly dream is "
    "running: try again later.\n\n"
    "Returns the `task_id` (also visible in Flower), the `job`, your `agent`, the `state` and, once finished, the "
    "`result` (its `changes` and figures) or the `error`."
)


async def memory_trigger(ctx: Context, job: Job, dry_run: DryRun = None, wait: Wait = None) -> TriggerResult:
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        request = parse(TriggerIn, given(job=job, dry_run=dry_run, wait=wait))
        started = await offload(
            app.service.trigger_and_wait, agent, request.job, dry_run=request.dry_run, wait=request.wait
        )
    outcome = started.outcome
    result = TriggerResult(agent=agent, job=request.job, task_id=started.task_id, dry_run=request.dry_run)
    if outcome is None:
        return result
    finished = StageResult.of_task(outcome.value) if outcome.state == "finished" else None
    return result.model_copy(update={"state": outcome.state, "result": finished, "error": outcome.error or None})


async def memory_dream_log(ctx: Context, limit: Limit = None, stage: Stage = None, run_id: RunId = None) -> DreamLog:
    """See what your dream did: each stage run (when, status, figures, tokens) and, for one run, every change.

    With no arguments: the latest runs, newest first. With `stage`: only that stage's. With `run_id`:
    that run and its reviewable diff, every row it wrote or changed with its state before and after
    (narratives written, weights before → after, profile and self-concept versions, threads,
    supersessions, the scan watermark). An operator can undo a run with `tideline dream undo RUN`.

    Returns `runs` and, with `run_id`, `changes`.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        query = parse(DreamLogQuery, given(limit=limit, stage=stage, run_id=run_id))
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
