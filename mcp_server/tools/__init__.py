"""The MCP tools, one module per concept; `register_all` adds every one of them to a server."""

from __future__ import annotations

from mcp.server import MCPServer

from mcp_server.tools import context, dream, inject, narratives, organize, profiles, status


def register_all(server: MCPServer) -> None:
    for module in (narratives, context, profiles, status, organize, dream, inject):
        module.register(server)


__all__ = ["register_all"]
