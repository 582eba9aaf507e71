"""Conversations: the agent's sessions over time, and a session's turns with the memories each became."""

from __future__ import annotations

from starlette.responses import Response

from tideline_console.visit import PageFunction, Visit

PAGE = 50


async def sessions(visit: Visit) -> Response:
    found = await visit.call(visit.service.sessions, visit.agent, limit=PAGE + 1, before=visit.arg("before") or None)
    more = len(found) > PAGE
    shown = found[:PAGE]
    return visit.render("conversations.html", sessions=shown, more=more)


async def session(visit: Visit) -> Response:
    session_id = str(visit.request.path_params["session_id"])
    view = await visit.call(visit.service.session_view, visit.agent, session_id)
    return visit.render("conversation.html", view=view, session_id=session_id, focus=visit.arg("turn"))


ROUTES: list[tuple[str, list[str], PageFunction, bool]] = [
    ("/conversations", ["GET"], sessions, False),
    ("/conversations/{session_id:path}", ["GET"], session, False),
]
