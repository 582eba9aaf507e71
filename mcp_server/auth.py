"""Who is calling: static bearer tokens bound to agent ids (HTTP) or the local user (stdio)."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl

from tideline_core.settings import is_loopback

# Resolves the agent id of the current request; called inside a tool, on the request's context.
AgentResolver = Callable[[], str]


def transport_security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection for a loopback address the SDK does not know (127.0.0.2 ...); None: the SDK's own."""
    if host in ("127.0.0.1", "localhost", "::1") or not is_loopback(host):
        return None
    shown = f"[{host}]" if ":" in host else host
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=[f"{shown}:*"], allowed_origins=[f"http://{shown}:*"]
    )


class StaticTokenVerifier:
    """Checks a bearer token against the configured `TOKEN:AGENT` pairs.

    The agent id travels as the token's client id and subject, so the SDK's session ownership
    (a session opened with token A cannot be used with token B) keys on the agent too.
    """

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self._tokens = [(token.encode(), agent) for token, agent in tokens.items()]

    async def verify_token(self, token: str) -> AccessToken | None:
        presented = token.encode()
        agent = None
        # Compare against every entry in constant time, so timing does not reveal a near match.
        for known, owner in self._tokens:
            if hmac.compare_digest(presented, known):
                agent = owner
        if agent is None:
            return None
        return AccessToken(token=token, client_id=agent, subject=agent, scopes=[])


def auth_settings(host: str, port: int) -> AuthSettings:
    """Resource-server settings for static tokens: no OAuth server exists, so none is advertised."""
    return AuthSettings(issuer_url=AnyHttpUrl(f"http://{_url_host(host)}:{port}"), resource_server_url=None)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def fixed_agent(agent: str) -> AgentResolver:
    """Every request acts as `agent` (stdio, or HTTP on loopback without tokens)."""
    return lambda: agent


def token_agent() -> str:
    """The agent bound to the request's bearer token; a request without one is refused, never defaulted."""
    token = get_access_token()
    if token is None:
        raise ToolError("this server requires a bearer token (Authorization: Bearer TOKEN)")
    return token.client_id
