"""Composition root of the console: the service, the gate, every page's route, and the HTTP runner."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from tideline_console.pages import PAGES
from tideline_console.render import page
from tideline_console.security import COOKIE, Gate, csrf_matches
from tideline_console.visit import Beats, Console, guarded, set_cookie
from tideline_core.compose import compose
from tideline_core.service import JobQueue, Service
from tideline_core.settings import Settings
from tideline_core.text.tokens import initialize as load_tokenizer

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
PROBE_SECONDS = 0.5  # how long the pipeline page waits for Redis to say which beats run


def create_app(settings: Settings, *, service: Service | None = None, jobs: JobQueue | None = None) -> Starlette:
    """The console over `service` (kept open by the caller), or over one composed from the settings for the app's life.

    With no service and no `jobs`, changes are queued on Celery as the MCP server queues them."""
    gate = Gate.from_settings(settings)
    holder: dict[str, Console] = {}

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            active = service
            if active is None:
                queue = jobs if jobs is not None else _celery_jobs(settings, stack)
                active = await anyio.to_thread.run_sync(partial(compose, settings, jobs=queue))
                stack.callback(active.close)
            await anyio.to_thread.run_sync(load_tokenizer)
            holder["console"] = Console(settings, active, gate, partial(_beats, settings))
            yield

    def bound(function: Any, changes: bool) -> Any:
        async def endpoint(request: Request) -> Response:
            return await guarded(holder["console"], function, changes=changes)(request)

        return endpoint

    routes: list[BaseRoute] = [
        Route("/", _home, methods=["GET"]),
        Route("/healthz", _healthz, methods=["GET"]),
        Route("/login", partial(_login_page, gate), methods=["GET"]),
        Route("/login", partial(_log_in, gate), methods=["POST"]),
        Route("/logout", partial(_log_out, gate), methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    for path, methods, function, changes in PAGES:
        routes.append(Route(path, bound(function, changes), methods=methods))
    return Starlette(routes=routes, lifespan=lifespan)


def _celery_jobs(settings: Settings, stack: AsyncExitStack) -> JobQueue:
    from workers.jobqueue import CeleryJobQueue

    queue = CeleryJobQueue(settings)
    stack.callback(queue.close)
    return queue


def _beats(settings: Settings) -> Beats | None:
    import redis

    from workers.beat import running_beats, schedule_holder
    from workers.locks import redis_client_url

    client = redis.Redis.from_url(
        redis_client_url(settings.resolved_redis_url),
        socket_timeout=PROBE_SECONDS,
        socket_connect_timeout=PROBE_SECONDS,
    )
    try:
        return Beats(schedule_holder(client), tuple((b.node, b.role) for b in running_beats(client)))
    except redis.RedisError:
        return None
    finally:
        client.close()


async def _home(_: Request) -> Response:
    return RedirectResponse("/memories", status_code=303)


async def _healthz(_: Request) -> Response:
    return JSONResponse({"status": "ok", "service": "tideline-console"})


def _safe_next(value: str) -> str:
    """Only a path of this console (never another site's address) is followed after a login."""
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or not value.startswith("/") or value.startswith("//"):
        return "/memories"
    return value


async def _login_page(gate: Gate, request: Request) -> Response:
    if not gate.login_required:
        return RedirectResponse("/memories", status_code=303)
    return page("login.html", next=_safe_next(request.query_params.get("next", "/memories")), failed=False, visit=None)


async def _log_in(gate: Gate, request: Request) -> Response:
    host = request.headers.get("host", "")
    refused = gate.host_refused(host) or gate.origin_refused(request.headers.get("origin"), host, "POST")
    if refused:
        return page("refused.html", 403, message=refused, visit=None)
    async with request.form(max_files=0, max_fields=10) as form:
        secret = str(form.get("secret") or "")
        target = _safe_next(str(form.get("next") or "/memories"))
    opened = gate.log_in(secret) if gate.login_required else None
    if opened is None:
        return page("login.html", 401, next=target, failed=True, visit=None)
    sid, _login = opened
    response = RedirectResponse(target, status_code=303)
    set_cookie(response, request, sid)
    return response


async def _log_out(gate: Gate, request: Request) -> Response:
    host = request.headers.get("host", "")
    refused = gate.host_refused(host) or gate.origin_refused(request.headers.get("origin"), host, "POST")
    if refused:
        return page("refused.html", 403, message=refused, visit=None)
    login = gate.session(request.cookies.get(COOKIE))
    async with request.form(max_files=0, max_fields=10) as form:
        csrf = str(form.get("csrf") or "")
    if login is not None and csrf_matches(login, csrf):
        gate.log_out(request.cookies.get(COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


def url(settings: Settings) -> str:
    host = f"[{settings.console_host}]" if ":" in settings.console_host else settings.console_host
    return f"http://{host}:{settings.console_port}/"


def run(settings: Settings) -> None:
    """Serve the console until stopped."""
    import uvicorn

    app = create_app(settings)
    log.info("serving the console on %s", url(settings))
    uvicorn.run(
        app,
        host=settings.console_host,
        port=settings.console_port,
        log_config=None,
        log_level=settings.log_level.lower(),
    )
