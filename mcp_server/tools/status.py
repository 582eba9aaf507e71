"""memory_status: what is stored for the caller, what is still pending, and how the pipeline is doing."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from mcp_server.context import AppContext
from mcp_server.models import Counts, DreamRun, Status, TaskEvent
from mcp_server.tools._edge import READ, app_of, offload, tool_errors
from tideline_core.store import status as store
from tideline_core.store.dream_runs import recent_runs

LAST_ERRORS = 5
LAST_DREAM_RUNS = 5


async def memory_status(ctx: Context) -> Status:
    """Check your memory's health: how much is stored, what is still being processed, whether workers run.

    Use it when search seems to miss recent things (embeddings may still be pending) or to report
    on the memory system itself. Takes no arguments and only ever shows your own data.

    Returns counts per kind, embeddings pending, queue depths and live workers (null when the
    broker is unreachable), the active embedding model, the latest task errors, and the latest
    dream-queue stage runs (recluster, refresh, entity_graph, scan: status and counts), which is
    where a job started with memory_trigger shows up.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        return await offload(_status, app, agent)


def _status(app: AppContext, agent: str) -> Status:
    with app.db.read() as conn:
        counts = store.counts(conn, agent)
        events = store.last_task_events(conn, LAST_ERRORS, agent_id=agent)
        runs = recent_runs(conn, agent, LAST_DREAM_RUNS)
    depths = app.dispatcher.queue_depths()
    return Status(
        agent=agent,
        counts=Counts(
            narratives=counts.narratives,
            context_turns=counts.context_turns,
            profiles=counts.profiles,
            self_concept=counts.self_concept,
            threads=counts.threads,
            snapshots=counts.snapshots,
            pending_narratives=counts.pending_narratives,
            pending_context=counts.pending_context,
            extra=dict(counts.extra),
        ),
        embeddings_pending=counts.pending_narratives + counts.pending_context,
        broker_reachable=depths is not None,
        queue_depths=depths,
        # Only asked when the broker answered: inspecting a dead broker would just wait out its timeout.
        workers=app.dispatcher.workers() if depths is not None else None,
        embedder=app.embedder.model,
        last_task_errors=[
            TaskEvent(
                task_name=e.task_name,
                task_id=e.task_id,
                agent_id=e.agent_id,
                state=e.state,
                detail=e.detail,
                created_at=e.created_at,
            )
            for e in events
        ],
        dream_runs=[
            DreamRun(
                stage=r.stage,
                day=r.day,
                status=r.status,
                trigger=str(r.inputs.get("trigger", "")),
                outputs=r.outputs,
                error=r.error,
                started_at=r.started_at,
                finished_at=r.finished_at,
            )
            for r in runs
        ],
    )


def register(server: MCPServer) -> None:
    server.add_tool(memory_status, title="Memory status", annotations=READ)
