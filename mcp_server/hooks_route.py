"""POST /hooks/v1/event: a Claude Code / Codex hook event answered by the running server (the thin `tideline hook`).

The body is `{"runtime": "claude-code" | "codex", "agent": "...", "event": {the runtime's hook JSON}}`;
the answer is `{"output": {what the hook prints} | null, "recorded": {what storing did} | null,
"notes": [...]}` with the header `X-Tideline-Hook: server`. The event is answered by
`tideline_hooks.respond`, as the CLI's local fallback answers it. Bearer tokens work as for MCP:
with TIDELINE_HTTP_TOKENS set, a token is required and the agent is its own (another `agent` in the
body is refused); without, the body's `agent` is used (else TIDELINE_AGENT). A request with an
`Origin` header (a web page) or without a JSON content type is refused, so no browser can post here.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from functools import partial
from typing import Any

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcp_server.context import AppContext
from tideline_core.errors import InvalidInput, TidelineError
from tideline_core.service.notices import other_agents_notice
from tideline_hooks import TranscriptOffsets, parse_event, parse_runtime, respond

log = logging.getLogger(__name__)

PATH = "/hooks/v1/event"
ANSWERED_BY = "X-Tideline-Hook"
MAX_BODY = 4 * 1024 * 1024  # a hook event is small; a pasted prompt may be long
MAX_AGENT = 128


class HookRoute:
    """The route's handler; `serving(context)` hands it the service the server's lifespan composed."""

    def __init__(self, *, tokens_required: bool) -> None:
        self._tokens_required = tokens_required
        self._context: AppContext | None = None

    @contextmanager
    def serving(self, context: AppContext) -> Iterator[None]:
        self._context = context
        try:
            yield
        finally:
            self._context = None

    async def handle(self, request: Request) -> Response:
        if "origin" in request.headers:
            return _error(403, "cross-origin requests are refused: this route is for the local `tideline hook`")
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return _error(415, "the body must be JSON (Content-Type: application/json)")
        context = self._context
        if context is None:
            return _error(503, "the server is starting or stopping")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return _error(413, f"the body must be at most {MAX_BODY} bytes")
        token = get_access_token()
        if self._tokens_required and token is None:
            return _error(401, "this server requires a bearer token (Authorization: Bearer TOKEN)")
        try:
            data = json.loads(body)
        except ValueError as exc:
            return _error(400, f"invalid input: body: must be JSON ({exc})", field="body", rule="must be JSON")
        try:
            if not isinstance(data, dict):
                raise InvalidInput("body", "must be a JSON object with runtime, agent and event")
            runtime = parse_runtime(data.get("runtime"))
            event = parse_event(data.get("event"))
            agent = _agent(data.get("agent"), token.client_id if token else None, context.settings.agent)
            answer = await anyio.to_thread.run_sync(
                partial(
                    respond,
                    context.service,
                    event,
                    agent_id=agent,
                    runtime=runtime,
                    offsets=TranscriptOffsets.under(context.settings.home),
                )
            )
        except InvalidInput as exc:
            status = 403 if exc.field == "agent" and token is not None else 400
            return _error(status, f"invalid input: {exc}", field=exc.field, rule=exc.rule)
        except (TidelineError, OSError) as exc:  # a transcript gone while it was read, say
            log.warning("hook event not answered: %s: %s", type(exc).__name__, exc)
            return _error(500, f"{type(exc).__name__}: {exc}")
        payload: dict[str, Any] = {
            "output": answer.output(),
            "recorded": asdict(answer.recorded) if answer.recorded is not None else None,
            "notes": list(answer.notes),
        }
        if event.name == "SessionStart" and not self._tokens_required:
            # A server without tokens serves one local user: the hook's log may name the other agents here.
            agents = await anyio.to_thread.run_sync(context.service.agents_with_memories)
            payload["notice"] = other_agents_notice(agent, agents)
        return JSONResponse(payload, headers={ANSWERED_BY: "server"})


def _agent(requested: Any, bound: str | None, default: str) -> str:
    """The token's agent (another one asked for is refused), else the one asked for, else the server's."""
    if requested is not None and (not isinstance(requested, str) or not 0 < len(requested) <= MAX_AGENT):
        raise InvalidInput("agent", f"must be text of 1-{MAX_AGENT} characters, got {requested!r:.80}")
    if bound is not None:
        if requested not in (None, bound):
            raise InvalidInput("agent", f"the token is bound to agent {bound!r}, not {requested!r}")
        return bound
    return requested or default


def _error(status: int, message: str, **extra: str) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status, headers={ANSWERED_BY: "server"})
