"""The dream's record: each run and stage with its changes as a diff, tokens, failures and skips; undo per run."""

from __future__ import annotations

from starlette.responses import Response

from tideline_console.diffs import field_changes
from tideline_console.visit import PageFunction, Visit
from tideline_core.errors import InvalidInput

LOG_LIMIT = 100


def run_id(visit: Visit) -> int:
    raw = visit.request.path_params.get("run_id", "")
    if not str(raw).isdigit():
        raise InvalidInput("run_id", "must be a run's number")
    return int(raw)


async def runs(visit: Visit) -> Response:
    stage = visit.arg("stage") or None
    log = await visit.call(visit.service.dream_log, visit.agent, limit=LOG_LIMIT, stage=stage)
    days: dict[str, list[object]] = {}
    for run in log:
        days.setdefault(run.day, []).append(run)
    return visit.render("dream.html", days=days, stage=stage or "")


async def one_run(visit: Visit) -> Response:
    view = await visit.call(visit.service.dream_run, visit.agent, run_id(visit))
    changes = [(c, field_changes(c.action, c.before, c.after)) for c in view.changes]
    return visit.render("dream_run.html", run=view.run, changes=changes, undone=visit.arg("undone"))


async def undo(visit: Visit) -> Response:
    number = run_id(visit)
    report = await visit.call(visit.service.dream_undo, visit.agent, number)
    return visit.back(f"/dream/{number}", undone=str(report.restored))


ROUTES: list[tuple[str, list[str], PageFunction, bool]] = [
    ("/dream", ["GET"], runs, False),
    ("/dream/{run_id}", ["GET"], one_run, False),
    ("/dream/{run_id}/undo", ["POST"], undo, True),
]
