"""A memory: every field, its scores, amendments, versions and source turns in their conversation; edits to it."""

from __future__ import annotations

from starlette.responses import Response

from tideline_console.forms import model, number
from tideline_console.visit import PageFunction, Visit
from tideline_core.domain.inputs import AmendmentIn
from tideline_core.errors import InvalidInput

EDITABLE_TEXT = ("gesture", "context", "moment", "cognition_direction", "entities_role", "narrative_type")
EDITABLE_SCORES = ("importance", "emotional", "unresolved")


def narrative_id(visit: Visit) -> int:
    raw = str(visit.request.path_params.get("narrative_id", ""))
    if not raw.isdigit():
        raise InvalidInput("narrative_id", "must be a memory's number")
    return int(raw)


async def memory(visit: Visit) -> Response:
    view = await visit.call(visit.service.memory_view, visit.agent, narrative_id(visit))
    return visit.render("memory.html", view=view, m=view.memory, done=visit.arg("done"))


async def amend(visit: Visit) -> Response:
    number_ = narrative_id(visit)
    data = model(AmendmentIn, narrative_id=number_, note=visit.arg("note"))
    await visit.call(visit.service.amend, visit.agent, data)
    return visit.back(f"/memories/{number_}", done="amended")


def _list(value: str) -> list[str]:
    return [part.strip() for part in value.replace("，", ",").split(",") if part.strip()]


async def edit(visit: Visit) -> Response:
    """The changed fields only: a field left as it was is not part of the new version's difference."""
    number_ = narrative_id(visit)
    view = await visit.call(visit.service.memory_view, visit.agent, number_)
    old = view.memory
    changed: dict[str, object] = {}
    for name in EDITABLE_TEXT:
        value = visit.arg(name)
        if name in visit.form and value != str(getattr(old, name)):
            changed[name] = value
    for name in EDITABLE_SCORES:
        value = number(visit.arg(name), name)
        if name in visit.form and value is not None and value != getattr(old, name):
            changed[name] = value
    for name in ("tags", "related_entities"):
        if name in visit.form and tuple(_list(visit.arg(name))) != tuple(getattr(old, name)):
            changed[name] = _list(visit.arg(name))
    outcome = await visit.call(visit.service.edit_memory, visit.agent, number_, changed)
    return visit.back(f"/memories/{outcome.narrative_id}", done="edited")


async def supersede(visit: Visit) -> Response:
    number_ = narrative_id(visit)
    by = number(visit.arg("by"), "by")
    if by is None:
        raise InvalidInput("by", "give the number of the memory that replaces this one")
    await visit.call(visit.service.supersede_memory, visit.agent, number_, by)
    return visit.back(f"/memories/{number_}", done="superseded")


async def restore(visit: Visit) -> Response:
    number_ = narrative_id(visit)
    await visit.call(visit.service.restore_memory, visit.agent, number_)
    return visit.back(f"/memories/{number_}", done="restored")


ROUTES: list[tuple[str, list[str], PageFunction, bool]] = [
    ("/memories/{narrative_id}", ["GET"], memory, False),
    ("/memories/{narrative_id}/amend", ["POST"], amend, True),
    ("/memories/{narrative_id}/edit", ["POST"], edit, True),
    ("/memories/{narrative_id}/supersede", ["POST"], supersede, True),
    ("/memories/{narrative_id}/restore", ["POST"], restore, True),
]
