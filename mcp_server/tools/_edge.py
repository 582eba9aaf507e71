"""The tool edge: argument declarations, the thread hop for sync store work, and error translation.

Errors, one format everywhere (`invalid input: <argument>: <rule>`, `not found: ...`, or the core's
own sentence): a tool returns them as an error result (`isError`) the calling model reads and can
correct, as the MCP spec asks of input validation; a prompt, a resource or a completion answers
them as a JSON-RPC error, -32602 (invalid params) for the caller's mistake and -32603 (internal) for
a fault on this side.

Arguments are declared loosely to the SDK (text as `str`, everything else as `Any`) but published
with the JSON schema of the core input model's field. The SDK's own validation would reject a
wrong type with a pydantic dump before our code runs; this way the core model validates every
rule once and the caller gets one clear message naming the field and the rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, partial
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, ToolAnnotations
from pydantic import BaseModel, WithJsonSchema

from mcp_server.context import AppContext
from tideline_core.domain.inputs import WriteKey, parse
from tideline_core.errors import InvalidInput, NotFound, TidelineError

T = TypeVar("T")

# Every write appends or upserts (history is kept), so none is destructive; none is idempotent either:
# repeating a write adds a second row or a new version, unless the caller gives an idempotency key.
# Nothing reaches beyond this server's own store.
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# destructiveHint and idempotentHint mean something only where readOnlyHint is false (the spec's words).
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)

DATE_SCHEMA: dict[str, Any] = {
    "type": "string",
    "description": (
        "ISO-8601 date or date-time, e.g. 2026-05-08 or 2026-05-08T13:56:00Z (UTC unless an offset is given)"
    ),
}


@cache
def _properties(model: type[BaseModel]) -> dict[str, Any]:
    return dict(model.model_json_schema()["properties"])


def described(schema: dict[str, Any], description: str) -> WithJsonSchema:
    """A tool argument published with `schema` and `description` (for arguments no core model field declares)."""
    published = {key: value for key, value in schema.items() if key != "title"}
    if description:  # an argument its name and limits say all of goes without one
        published["description"] = description
    return WithJsonSchema(published)


def spec(model: type[BaseModel], field: str, description: str, schema: dict[str, Any] | None = None) -> WithJsonSchema:
    """The published JSON schema of a tool argument: the core model field's own (or `schema`), described.

    Use as `Annotated[str, spec(...)]` for free text (the SDK then only checks it is a string and
    leaves JSON-looking text alone) and `Annotated[Any, spec(...)]` for everything else (numbers,
    lists, objects, enums, dates), which only the core model validates.
    """
    return described(schema if schema is not None else _properties(model)[field], description)


IdempotencyKey = Annotated[
    str, spec(WriteKey, "idempotency_key", "A retry with this key returns the first result, storing nothing.")
]


def write_key(value: str | None) -> str | None:
    """The caller's idempotency key, validated (None when not given)."""
    return parse(WriteKey, given(idempotency_key=value)).idempotency_key


def app_of(ctx: Context) -> AppContext:
    app = ctx.request_context.lifespan_context
    assert isinstance(app, AppContext), "the server lifespan yields an AppContext"
    return app


def given(**values: Any) -> dict[str, Any]:
    """The arguments the caller actually supplied (None means "not given": the model's default applies)."""
    return {name: value for name, value in values.items() if value is not None}


def invalid(field: str, rule: str) -> str:
    """The one wording of a caller's bad argument, whatever the tool, prompt or resource."""
    return f"invalid input: {field}: {rule}"


def message(exc: TidelineError) -> str:
    """What the caller reads for one of the core's errors."""
    if isinstance(exc, InvalidInput):
        return invalid(exc.field, exc.rule)
    if isinstance(exc, NotFound):
        return f"not found: {exc}"
    return str(exc)


@contextmanager
def tool_errors() -> Iterator[None]:
    """Translate the core's errors into the tool error the calling model reads; nothing else is caught."""
    try:
        yield
    except TidelineError as exc:
        raise ToolError(message(exc)) from None


@contextmanager
def request_errors() -> Iterator[None]:
    """Translate the core's errors into a JSON-RPC error (prompts, resources, completions); nothing else is caught.

    The caller's mistake (bad input, a row it cannot see) is invalid params; the rest of the core's
    errors (an embedder down, a lock held) are internal, with their sentence and without a traceback.
    """
    try:
        yield
    except (InvalidInput, NotFound) as exc:
        raise MCPError(code=INVALID_PARAMS, message=message(exc)) from None
    except TidelineError as exc:
        raise MCPError(code=INTERNAL_ERROR, message=message(exc)) from None


async def offload(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run sync store work on a worker thread so the event loop keeps serving other requests.

    The hop costs a fraction of a millisecond: memory_write through the in-process client measured
    p50 ≈ 2 ms including it (SQLite write + Celery publish on a Unix socket), inside the 5 ms budget,
    so every store call and publish goes through here rather than running on the loop.
    """
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))
