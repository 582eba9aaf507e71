"""memory_status: what is stored for the caller, what is still pending, and how the pipeline is doing."""

from __future__ import annotations

from mcp.server import MCPServer

from mcp_server.context import AppContext
from mcp_server.models import Status
from mcp_server.tools._edge import READ, offload, operation


@operation(None)
async def memory_status(app: AppContext, agent: str) -> Status:
    """Check your memory's health when search seems to miss recent things. Returns counts, pending embeddings, queues
    and workers (null when the broker is down), recent errors, dream runs and proposals waiting.
    """
    report = await offload(app.service.status, agent)
    return Status.of(report)


def register(server: MCPServer) -> None:
    server.add_tool(memory_status, title="Memory status", annotations=READ)
