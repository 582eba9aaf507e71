"""memory_status: what is stored for the caller, what is still pending, and how the pipeline is doing."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from mcp_server.models import Status
from mcp_server.tools._edge import READ, app_of, offload, tool_errors


async def memory_status(ctx: Context) -> Status:
    """Check your memory's health: how much is stored, what is still being processed, whether workers run.

    Use it when search seems to miss recent things (embeddings may still be pending) or to report
    on the memory system itself. Takes no arguments and only ever shows your own data.

    Returns counts per kind, embeddings pending, queue depths and live workers (null when the
    broker is unreachable), the active embedding model, the latest task errors, and the latest
    dream stage runs (status and figures), which is where a stage started with memory_trigger
    shows up.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        report = await offload(app.service.status, agent)
    return Status.of(report)


def register(server: MCPServer) -> None:
    server.add_tool(memory_status, title="Memory status", annotations=READ)
