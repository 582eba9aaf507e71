"""Injected context: memory_inject (session start), memory_prefetch (each turn), as tools, a prompt and a resource,
with completions for the prompt's session and the resource's agent."""

from __future__ import annotations

from typing import Annotated, Any

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
    ToolAnnotations,
)

from mcp_server.context import AppContext
from mcp_server.models_inject import Injection
from mcp_server.tools._edge import app_of, given, invalid, offload, request_errors, spec, tool_errors
from mcp_server.tools.narratives import RecentTurns
from tideline_core.inputs import InjectIn, PrefetchIn, parse

# Reads of the memory that remember what the session was shown (so its turns do not repeat it):
# not read-only in the strict sense, and a second call may answer differently.
INJECT = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

SessionId = Annotated[
    str,
    spec(
        InjectIn,
        "session_id",
        "This conversation's id: what the block shows is remembered for it, so memory_prefetch does not "
        "repeat it later in the session (≤ 256 chars; empty: remember nothing).",
    ),
]
Budget = Annotated[Any, spec(InjectIn, "budget", "Most tokens the block may take, integer 100–32000.")]
Query = Annotated[
    str, spec(PrefetchIn, "query", "What the user just said or asked, plain text (may be empty with recent_turns).")
]


async def memory_inject(ctx: Context, session_id: SessionId = "", budget: Budget = None) -> Injection:
    """Get the session-start block: who you are and what matters now, to put at the top of your context.

    Call it once when a conversation starts. It holds your SOUL file and self-concept, your latest
    state and open threads (T0), the heaviest memories of the last week (T2), where the last
    conversation left off (T2b) and a map of your memory (T3), within a token budget (default 2,000).
    The text stays byte-identical while nothing it shows changes, so it can sit in a cached prompt
    prefix; `version` tells when it changed.

    Returns the text, its version and token estimate, and each item with its tier and why it was chosen.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        request = parse(InjectIn, given(session_id=session_id, budget=budget))
        block = await offload(app.service.session_start, agent, request)
    return Injection.of(block)


async def memory_prefetch(
    ctx: Context, query: Query = "", recent_turns: RecentTurns = None, session_id: SessionId = "", budget: Budget = None
) -> Injection:
    """Get this turn's memories: what you remember that bears on what was just said, to add to your context.

    Call it on every user turn with the user's words as `query` and/or the last lines of the
    conversation as `recent_turns`. It searches memories and past conversation (T1; by keyword as
    well, T4, when meaning finds too little), leaves out what this session was already shown, and
    stays within a token budget (default 800). Append its text after the session-start block.

    Returns the text and each item with its tier, score and the signals that chose it.
    """
    app = app_of(ctx)
    agent = app.resolve_agent()
    with tool_errors():
        request = parse(
            PrefetchIn,
            given(query=query, conversation=recent_turns, session_id=session_id, budget=budget),
            names={"conversation": "recent_turns"},
        )
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
    server.add_tool(memory_inject, title="Session-start memory block", annotations=INJECT)
    server.add_tool(memory_prefetch, title="This turn's memories", annotations=INJECT)
    server.prompt(name=PROMPT, title="Tideline: session start")(tideline_session_start)
    server.resource(
        TEMPLATE,
        name="tideline_inject",
        title="Tideline session-start block",
        description="The session-start memory block of the agent in the URI (yours only), as markdown.",
        mime_type="text/markdown",
    )(inject_resource)
