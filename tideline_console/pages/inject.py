"""What the agent sees: the session-start block and a per-turn block for a typed query or pasted lines, as sent."""

from __future__ import annotations

from starlette.responses import Response

from tideline_console.forms import model, number, pasted_lines
from tideline_console.visit import PageFunction, Visit
from tideline_core.domain.inputs import InjectIn, PrefetchIn


async def preview(visit: Visit) -> Response:
    budget = number(visit.arg("budget"), "budget")
    start = await visit.call(visit.service.session_start, visit.agent, model(InjectIn, budget=budget))
    query, lines = visit.arg("query"), visit.arg("lines")
    turn = None
    if query or lines:
        request = model(PrefetchIn, query=query, conversation=pasted_lines(lines), budget=budget)
        turn = await visit.call(visit.service.prefetch, visit.agent, request, preview=True)
    return visit.render("inject.html", start=start, turn=turn, asked=query, lines=lines, budget=budget or "")


ROUTES: list[tuple[str, list[str], PageFunction, bool]] = [("/inject", ["GET"], preview, False)]
