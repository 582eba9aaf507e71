"""One request to a page: who is asking (their login), which agent they look at, and the guarded page wrapper."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from tideline_console.render import page
from tideline_console.security import COOKIE, SESSION_SECONDS, Gate, Login, csrf_matches
from tideline_core.errors import Conflict, InvalidInput, NotFound, TidelineError
from tideline_core.service import Service
from tideline_core.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_FORM = 256 * 1024


@dataclass(frozen=True)
class Beats:
    """Which beat holds the schedule, and every beat running with its role."""

    holder: str | None
    nodes: tuple[tuple[str, str], ...]  # (node, role)


def _no_beats() -> Beats | None:
    return None


@dataclass(frozen=True)
class Console:
    """What every page shares: the settings, the service, the gate, and how to ask Redis for the beats."""

    settings: Settings
    service: Service
    gate: Gate
    beats: Callable[[], Beats | None] = _no_beats  # None: Redis could not be asked


@dataclass(frozen=True)
class Visit:
    """A page's request: the login, the agent it shows, the agents the login may switch to, and a posted form."""

    request: Request
    console: Console
    login: Login
    agent: str
    agents: tuple[str, ...]
    form: Mapping[str, str]

    @property
    def service(self) -> Service:
        return self.console.service

    def arg(self, name: str, default: str = "") -> str:
        """A parameter of the query string or of the posted form, stripped."""
        value = self.form.get(name)
        if value is None:
            value = self.request.query_params.get(name, default)
        return value.strip()

    def args(self, name: str) -> list[str]:
        return [v.strip() for v in self.request.query_params.getlist(name) if v.strip()]

    async def call(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A service method, off the event loop (the store and the model are blocking)."""
        return await run_in_threadpool(partial(method, *args, **kwargs))

    def render(self, template: str, status: int = 200, **context: Any) -> Response:
        return page(template, status, visit=self, **context)

    def back(self, path: str, **params: str) -> Response:
        """After a change: to a page of the same agent (POST-redirect-GET, so a reload changes nothing again)."""
        query = "&".join(f"{k}={quote(str(v))}" for k, v in {"agent": self.agent, **params}.items() if v)
        return RedirectResponse(f"{path}?{query}", status_code=303)


PageFunction = Callable[[Visit], Awaitable[Response]]


def guarded(
    console: Console, function: PageFunction, *, changes: bool = False
) -> Callable[[Request], Awaitable[Response]]:
    """A page behind the gate: Host and Origin checked, a login (or the local user's session), CSRF on every change,
    the agent one the login may see, and the service's errors as pages that name what was wrong."""

    async def endpoint(request: Request) -> Response:
        gate = console.gate
        host = request.headers.get("host", "")
        refused = gate.host_refused(host) or gate.origin_refused(request.headers.get("origin"), host, request.method)
        if refused:
            return _refusal(403, refused)
        login = gate.session(request.cookies.get(COOKIE))
        new_cookie: str | None = None
        if login is None:
            if gate.login_required:
                if changes:
                    return _refusal(401, "log in first: this console asks for a login")
                return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
            new_cookie, login = gate.open_local()
        form: dict[str, str] = {}
        if changes:
            if int(request.headers.get("content-length") or 0) > MAX_FORM:
                return _refusal(413, f"a form must be at most {MAX_FORM} bytes")
            async with request.form(max_files=0, max_fields=200) as posted:
                form = {k: v for k, v in posted.items() if isinstance(v, str)}
            if new_cookie is not None or not csrf_matches(login, form.get("csrf")):
                return _refusal(403, "the form's CSRF token is missing or not this session's: reload the page")
        try:
            known = await run_in_threadpool(console.service.agent_ids)
            # A token's agent is listed even before it has written anything.
            candidates = [console.settings.agent, *known, *sorted(login.agents or ())]
            agents = tuple(a for a in dict.fromkeys(candidates) if login.may_see(a))
            asked = form.get("agent") or request.query_params.get("agent") or ""
            if asked and not login.may_see(asked):
                return _refusal(403, f"this login may not see agent {asked!r}")
            agent = asked or (agents[0] if agents else console.settings.agent)
            visit = Visit(request, console, login, agent, agents or (agent,), form)
            response = await function(visit)
        except InvalidInput as exc:
            response = _refusal(400, str(exc))
        except NotFound as exc:
            response = _refusal(404, str(exc))
        except Conflict as exc:
            response = _refusal(409, str(exc))
        except TidelineError as exc:
            log.warning("console page %s failed: %s", request.url.path, exc)
            response = _refusal(503, str(exc))
        if new_cookie is not None:
            set_cookie(response, request, new_cookie)
        return response

    return endpoint


def set_cookie(response: Response, request: Request, sid: str) -> None:
    response.set_cookie(
        COOKIE,
        sid,
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )


def _refusal(status: int, message: str) -> Response:
    return page("refused.html", status, message=message, visit=None)
