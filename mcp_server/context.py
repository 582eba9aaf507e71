"""The typed context the server's lifespan yields and every tool reads."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_server.auth import AgentResolver
from tideline_core.service import Service
from tideline_core.settings import Settings


@dataclass(frozen=True)
class AppContext:
    """The service for one server process; `resolve_agent` names the caller of the current request."""

    settings: Settings
    service: Service
    resolve_agent: AgentResolver
