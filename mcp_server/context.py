"""The typed context the server's lifespan yields and every tool reads."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_server.auth import AgentResolver
from mcp_server.dispatch import Dispatcher
from tideline_core.embedders import Embedder
from tideline_core.search.service import SearchService
from tideline_core.settings import Settings
from tideline_core.store.database import Database


@dataclass(frozen=True)
class AppContext:
    """Shared resources for one server process; `resolve_agent` names the caller of the current request."""

    settings: Settings
    db: Database
    search: SearchService
    embedder: Embedder
    dispatcher: Dispatcher
    resolve_agent: AgentResolver
