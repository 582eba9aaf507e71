"""The review inbox: each proposal a stage kept instead of applying, with its changes; approve or reject."""

from __future__ import annotations

from starlette.responses import Response

from tideline_console.diffs import field_changes
from tideline_console.pages.dream import run_id
from tideline_console.visit import PageFunction, Visit


async def inbox(visit: Visit) -> Response:
    waiting = await visit.call(visit.service.dream_review, visit.agent)
    proposals = [
        (view.run, [(c, field_changes(c.action, c.before, c.after)) for c in view.changes]) for view in waiting
    ]
    mode = visit.console.settings.dream_review
    return visit.render("review.html", proposals=proposals, mode=mode, done=visit.arg("done"), run=visit.arg("run"))


async def approve(visit: Visit) -> Response:
    number = run_id(visit)
    await visit.call(visit.service.dream_approve, visit.agent, number)
    return visit.back("/review", done="approved", run=str(number))


async def reject(visit: Visit) -> Response:
    number = run_id(visit)
    await visit.call(visit.service.dream_reject, visit.agent, number)
    return visit.back("/review", done="rejected", run=str(number))


ROUTES: list[tuple[str, list[str], PageFunction, bool]] = [
    ("/review", ["GET"], inbox, False),
    ("/review/{run_id}/approve", ["POST"], approve, True),
    ("/review/{run_id}/reject", ["POST"], reject, True),
]
