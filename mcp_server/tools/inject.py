"""Injected context: memory_inject (session start), memory_prefetch (each turn), as tools, a prompt and a resource,
with completions for the prompt's session and the resource's agent."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    Completion,
    CompletionArgument,
    PromptReference,
    Resource,
    ResourceTemplateReference,
)

from mcp_server.context import AppContext
from mcp_server.models_inject import Injection
from mcp_server.tools._edge import READ, RECENT_TURNS, app_of, given, invalid, offload, operation, request_errors
from tideline_core.domain.inputs import InjectIn, PrefetchIn, parse


@operation(InjectIn)
async def memory_inject(app: AppContext, agent: str, request: InjectIn) -> Injection:
    """Get the session-start block (who you are and what matters now) once, when a conversation starts: it is
    byte-identical until something in it changes. Returns the text, version and items.
    """
    block = await offload(app.service.session_start, agent, request)
    return Injection.of(block)


@operation(PrefetchIn, fields=("query", "conversation", "session_id", "budget"), names=RECENT_TURNS)
async def memory_prefetch(app: AppContext, agent: str, request: PrefetchIn) -> Injection:
    """Get this turn's memories on every user turn: pass the user's words (query, recent_turns) and append the text
    after the session-start block; nothing shown this session repeats. Returns the text and items.
    """
    block = await offload(app.service.prefetch, agent, request)
    return Injection.of(block)


PROMPT = "tideline_session_start"
TEMPLATE = "tideline://inject/{agent}"
COMPLETIONS = 20  # session ids offered at once: the latest first


async def tideline_session_start(ctx: Context, session_id: str = "") -> list[UserMessage]:
    """Your memory at the start of this conversation: who you are, what matters now, where you left off."""
    app = app_of(ctx)
    agent = app.resolve_agent()
    with request_errors():
        request = parse(InjectIn, given(session_id=session_id or None))
        block = await offload(app.service.session_start, agent, request)
    return [UserMessage(block.text or "(no memories yet)")]


async def inject_resource(agent: str, ctx: Context) -> str:
    """The session-start block of `agent` (only your own: another agent's is refused)."""
    app = app_of(ctx)
    caller = app.resolve_agent()
    if agent != caller:
        raise MCPError(
            code=INVALID_PARAMS,
            message=invalid("agent", f"{uri(agent)} is another agent's memory; yours is {uri(caller)}"),
            data={"uri": uri(agent)},
        )
    with request_errors():
        block = await offload(app.service.session_start, caller, InjectIn())
    return block.text


def uri(agent: str) -> str:
    return TEMPLATE.format(agent=agent)


def own_resource(agent: str) -> Resource:
    """The caller's own session-start block, as `resources/list` shows it."""
    return Resource(
        uri=uri(agent),
        name="tideline_inject",
        title="Tideline session-start block",
        description=f"The session-start memory block of {agent} (you), as markdown.",
        mime_type="text/markdown",
    )


async def complete(
    app: AppContext, ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument
) -> Completion:
    """Completions for the prompt's `session_id` (the caller's latest sessions) and the template's `agent` (the
    caller alone).

    Anything else completes to nothing rather than an error: a client asks for completions as the
    user types, where an empty list is the answer it can use (and what MCP's conformance suite asks).
    """
    agent = app.resolve_agent()
    if isinstance(ref, PromptReference) and (ref.name, argument.name) == (PROMPT, "session_id"):
        with request_errors():
            sessions = await offload(app.service.recent_sessions, agent, argument.value, limit=COMPLETIONS + 1)
        return Completion(values=sessions[:COMPLETIONS], has_more=len(sessions) > COMPLETIONS)
    if isinstance(ref, ResourceTemplateReference) and (ref.uri, argument.name) == (TEMPLATE, "agent"):
        return Completion(values=[agent] if agent.startswith(argument.value) else [], has_more=False)
    return Completion(values=[], has_more=False)


def register(server: MCPServer) -> None:
    server.add_tool(memory_inject, title="Session-start memory block", annotations=READ)
    server.add_tool(memory_prefetch, title="This turn's memories", annotations=READ)
    server.prompt(name=PROMPT, title="Tideline: session start")(tideline_session_start)
    server.resource(
        TEMPLATE,
        name="tideline_inject",
        title="Tideline session-start block",
        description="The session-start memory block of the agent in the URI (yours only), as markdown.",
        mime_type="text/markdown",
    )(inject_resource)
