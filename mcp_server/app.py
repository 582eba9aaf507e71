"""Composition root of the MCP server: lifespan resources, tools, auth, and the stdio / HTTP runners."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from typing import Any, Literal

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    GetPromptResult,
    InputRequiredResult,
)
from mcp_types import Resource as MCPResource
from mcp_types import Tool as MCPTool
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcp_server import arguments, pipes
from mcp_server.auth import (
    AgentResolver,
    StaticTokenVerifier,
    auth_settings,
    fixed_agent,
    token_agent,
    transport_security,
)
from mcp_server.context import AppContext
from mcp_server.hooks_route import PATH as HOOKS_PATH
from mcp_server.hooks_route import HookRoute
from mcp_server.tools import inject, register_all
from mcp_server.tools._edge import invalid, message
from tideline_core.compose import compose
from tideline_core.domain import schemas
from tideline_core.domain.inputs import explain_validation
from tideline_core.embedding import Embedder, NoEmbedder
from tideline_core.errors import ConfigurationError, EmbedderUnavailable
from tideline_core.service import JobQueue, Service
from tideline_core.settings import Settings, is_loopback
from tideline_core.text.tokens import initialize as load_tokenizer
from workers.jobqueue import CeleryJobQueue

log = logging.getLogger(__name__)

# How long a stopping server waits for its warm-up to be done with the store (it counts an agent's rows, then
# hands the build to the searcher's own thread) before closing the store regardless.
WARM_UP_STOP_SECONDS = 10.0

INSTRUCTIONS = """\
Tideline is your long-term memory. Everything you store stays; search brings it back.
- memory_write: keep a moment worth remembering (gesture = what happened, in one sentence).
- context_record: keep a raw conversation turn verbatim.
- memory_search / context_search: find things by words or meaning (Chinese and English).
- memory_recall, context_timeline: look back in order.
- profiles, self-concept, threads and snapshots: who others are, who you are, what is open, where you are.
- memory_status: what is stored and whether background processing keeps up.
"""


def _warm_up(service: Service, agents: Sequence[str], stopping: threading.Event, off_store: threading.Event) -> None:
    """Load the tokenizer's dictionary and the model, and start building the search indexes of `agents`, so the
    first search does not pay for them.

    Runs in a thread of its own while the server already answers: a client's `initialize` never
    waits for a model (a search that comes first waits for it within its query timeout, then answers
    by keyword and says so), nor for an agent's indexes (built on the warming thread beside the model's
    load; a search that comes first answers from the store's full-text index and says so, `search.warming`).
    An unreachable embedder is not fatal. Once `stopping` is set it starts nothing more on the store, and it sets
    `off_store` when it is done with the store: the server closes the store only after that.
    """
    try:
        load_tokenizer()
        for agent in agents:
            if stopping.is_set():
                return
            service.warm_up(agent)
    finally:
        off_store.set()
    if stopping.is_set():
        return
    embedder = service.embedder
    if not isinstance(embedder, NoEmbedder):
        try:
            embedder.queries(["warm up"], timeout=None)
        except (EmbedderUnavailable, ConfigurationError) as exc:
            log.warning(
                "embedder %s not ready at start-up: %s (search stays keyword-only until it is)", embedder.model, exc
            )
    _return_free_memory()


def _stop_warm_up(stopping: threading.Event, off_store: threading.Event) -> None:
    stopping.set()
    if not off_store.wait(WARM_UP_STOP_SECONDS):
        log.warning("the warm-up still reads the store after %.0f s: closing it all the same", WARM_UP_STOP_SECONDS)


def _return_free_memory() -> None:
    """Hand the loads' scratch memory back to the OS (glibc keeps freed heap otherwise: about 15 MiB here)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: nothing to hand back this way


class TidelineServer(MCPServer[AppContext]):
    """The SDK's server, with every tool's arguments checked by name, for nulls and for type before the tool runs,
    errors in one format (see `tools._edge`), the caller's own resources listed and completed, and stdio pipes
    read and written by the event loop itself (`pipes`).

    Protocol errors are the caller's when it names what is not there: an unknown tool, prompt or
    resource, or an argument a prompt does not take, is -32602 (invalid params). A tool's bad
    argument is an error result the model reads (MCP's tool execution error), never a JSON-RPC error.
    """

    def __init__(self, name: str, *, resolve_agent: AgentResolver, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._resolve_agent = resolve_agent
        self._lowlevel_server.add_request_handler("completion/complete", CompleteRequestParams, self._complete)

    async def run_stdio_async(self) -> None:
        if not (pipes.is_pipe(0) and pipes.is_pipe(1)):
            await super().run_stdio_async()
            return
        async with pipes.loop_stdio() as (lines, replies), stdio_server(lines, replies) as (read, write):  # type: ignore[arg-type]
            await self._lowlevel_server.run(read, write, self._lowlevel_server.create_initialization_options())

    _schemas: dict[str, dict[str, Any]] | None = None

    async def list_tools(self) -> list[MCPTool]:
        listed = await super().list_tools()
        return [
            tool.model_copy(
                update={
                    "description": arguments.one_paragraph(tool.description),
                    "input_schema": schemas.published(tool.input_schema),
                    "output_schema": None if tool.output_schema is None else arguments.outline(tool.output_schema),
                }
            )
            for tool in listed
        ]

    async def call_tool(
        self, name: str, arguments_: dict[str, Any], context: Context[AppContext, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if self._schemas is None:
            self._schemas = {tool.name: dict(tool.input_schema) for tool in await self.list_tools()}
        schema = self._schemas.get(name)
        if schema is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")
        wrong = arguments.problem(name, schema, arguments_)
        if wrong is not None:
            raise ToolError(invalid(*wrong))
        try:
            return await super().call_tool(name, arguments_, context)
        except UnexpectedToolError as exc:
            # A fault on this side: the traceback goes to the log (the SDK logs it), not to the caller.
            raise UnexpectedToolError(f"internal error in {name}: the server's log has the details") from exc
        except ToolError as exc:
            raise ToolError(_said(exc)) from exc.__cause__

    async def get_prompt(
        self, name: str, arguments_: dict[str, Any] | None = None, context: Context[AppContext, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        declared = {p.name: {a.name: bool(a.required) for a in p.arguments or []} for p in await self.list_prompts()}
        if name not in declared:
            known = ", ".join(declared)
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}; the prompts are {known}")
        wrong = arguments.prompt_problem(name, declared[name], arguments_ or {})
        if wrong is not None:
            raise MCPError(code=INVALID_PARAMS, message=invalid(*wrong))
        return await super().get_prompt(name, arguments_, context)

    async def list_resources(self) -> list[MCPResource]:
        return [*await super().list_resources(), inject.own_resource(self._resolve_agent())]

    async def _complete(
        self, ctx: ServerRequestContext[AppContext, Any], params: CompleteRequestParams
    ) -> CompleteResult:
        return CompleteResult(completion=await inject.complete(ctx.lifespan_context, params.ref, params.argument))


def _said(exc: ToolError) -> str:
    """A deliberate tool error as the caller reads it: its own text, without the SDK's "Error executing tool X:"."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):  # the SDK's own check of an argument, should one get that far
        return message(explain_validation(cause))
    if isinstance(cause, ToolError | ResourceError):
        return str(cause)
    return str(exc)


def create_server(
    settings: Settings,
    *,
    jobs: JobQueue | None = None,
    embedder: Embedder | None = None,
    agent_resolver: AgentResolver | None = None,
    http_tokens: Mapping[str, str] | None = None,
) -> MCPServer[AppContext]:
    """A server with every tool; the service is composed in its lifespan (once per process, or per in-process client).

    With `http_tokens` ({token: agent}) HTTP requests need a bearer token and act as its agent;
    otherwise every request acts as `settings.agent` (the local user on stdio). `jobs` and
    `embedder` default to the ones the settings describe; a passed-in job queue is not closed here.
    """
    tokens = dict(http_tokens or {})
    resolve_agent = agent_resolver or (token_agent if tokens else fixed_agent(settings.agent))
    hooks = HookRoute(tokens_required=bool(tokens))

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
        async with AsyncExitStack() as stack:
            active_jobs = jobs if jobs is not None else _celery_jobs(settings, stack)
            # Migrations, jieba's dictionary and model set-up are slow sync work: keep them off the loop.
            service = await anyio.to_thread.run_sync(
                partial(compose, settings, jobs=active_jobs, embedder=embedder, warming=True)
            )
            stack.callback(service.close)
            served = sorted(set(tokens.values())) if tokens else [settings.agent]
            stopping, off_store = threading.Event(), threading.Event()
            threading.Thread(
                target=_warm_up, args=(service, served, stopping, off_store), name="tideline-warm-up", daemon=True
            ).start()
            # Before the store closes (callbacks run last-in first-out): a server stopped as it starts must not
            # have its warm-up open the store again, in a folder that may be gone by then.
            stack.callback(_stop_warm_up, stopping, off_store)
            log.info("tideline MCP server ready: database %s, embedder %s", _redacted(settings), service.embedder.model)
            context = AppContext(settings=settings, service=service, resolve_agent=resolve_agent)
            stack.enter_context(hooks.serving(context))
            yield context

    server = TidelineServer(
        "tideline",
        resolve_agent=resolve_agent,
        title="Tideline memory",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        token_verifier=StaticTokenVerifier(tokens) if tokens else None,
        auth=auth_settings(settings.http_host, settings.http_port) if tokens else None,
        log_level=_sdk_level(settings.log_level),
    )
    register_all(server)
    server.custom_route("/healthz", methods=["GET"])(_healthz)
    server.custom_route(HOOKS_PATH, methods=["POST"])(hooks.handle)
    return server


def _celery_jobs(settings: Settings, stack: AsyncExitStack) -> JobQueue:
    # Built only when none is passed in, and closed with the lifespan that built it.
    queue = CeleryJobQueue(settings)
    stack.callback(queue.close)
    return queue


async def _healthz(_: Request) -> Response:
    """Unauthenticated liveness probe (says nothing about any agent's data)."""
    return JSONResponse({"status": "ok", "service": "tideline"})


def _redacted(settings: Settings) -> str:
    url = settings.resolved_database_url
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}…@{rest.rpartition('@')[2]}" if "@" in rest else url


LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LOG_LEVELS: tuple[LogLevel, ...] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _sdk_level(level: str) -> LogLevel:
    return next((known for known in LOG_LEVELS if known == level.upper()), "INFO")


def http_tokens(settings: Settings) -> dict[str, str]:
    """The token map for HTTP; refusing an unauthenticated server bound beyond loopback."""
    tokens = settings.http_token_map()
    if not tokens and not is_loopback(settings.http_host):
        raise ConfigurationError(
            f"refusing to serve HTTP on {settings.http_host} without bearer tokens: set TIDELINE_HTTP_TOKENS="
            "TOKEN:AGENT[,TOKEN2:AGENT2] or bind TIDELINE_HTTP_HOST to 127.0.0.1"
        )
    return tokens


def http_app(settings: Settings, *, jobs: JobQueue | None = None, embedder: Embedder | None = None) -> Starlette:
    """The streamable HTTP app (MCP at /mcp, GET /healthz) with the token rules applied."""
    server = create_server(settings, jobs=jobs, embedder=embedder, http_tokens=http_tokens(settings))
    return server.streamable_http_app(
        host=settings.http_host, transport_security=transport_security(settings.http_host)
    )


def _log_to_stderr(level: str) -> None:
    # stdout carries the stdio protocol: every log line, ours and the libraries', goes to stderr.
    logging.basicConfig(
        stream=sys.stderr, level=_sdk_level(level), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def run(settings: Settings, transport: Literal["stdio", "http"] = "stdio", *, embedder: Embedder | None = None) -> None:
    """Serve until stopped: stdio for one local agent runtime, or streamable HTTP at http_host:http_port/mcp.

    `embedder`: one already built (and loading); by default the one the settings name."""
    _log_to_stderr(settings.log_level)
    if transport == "stdio":
        create_server(settings, embedder=embedder).run("stdio")
        return
    import uvicorn

    app = http_app(settings, embedder=embedder)
    log.info("serving MCP on http://%s:%d/mcp", settings.http_host, settings.http_port)
    # log_config=None keeps uvicorn on our stderr logging (its default sends access logs to stdout).
    uvicorn.run(
        app, host=settings.http_host, port=settings.http_port, log_config=None, log_level=settings.log_level.lower()
    )
