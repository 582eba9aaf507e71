"""Memories: browse with filters (type, tags, entities, weight, dates, origin) or search with the hybrid search."""

from __future__ import annotations

from datetime import datetime

from starlette.responses import Response

from tideline_console.forms import model, number
from tideline_console.visit import PageFunction, Visit
from tideline_core.domain.inputs import SearchIn
from tideline_core.errors import InvalidInput
from tideline_core.search.hits import SearchHit
from tideline_core.service.browse import MemoryFilter

PAGE = 50
SEARCH_LIMIT = 50
FILTERS = ("type", "tag", "entity", "origin", "min_weight", "max_weight", "since", "until", "order", "superseded")


def _day(value: str, name: str) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise InvalidInput(name, f"must be a date like 2026-05-31, got {value[:40]!r}") from exc


def _list(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def parse_filter(visit: Visit) -> MemoryFilter:
    return MemoryFilter(
        narrative_type=visit.arg("type") or None,
        tags=_list(visit.arg("tag")),
        entities=_list(visit.arg("entity")),
        origin=visit.arg("origin") or None,
        min_weight=number(visit.arg("min_weight"), "min_weight", float),
        max_weight=number(visit.arg("max_weight"), "max_weight", float),
        since=_day(visit.arg("since"), "since"),
        until=_day(visit.arg("until"), "until"),
        include_superseded=visit.arg("superseded") == "1",
        order=visit.arg("order") or "recent",  # type: ignore[arg-type]  # checked by the service
        limit=PAGE,
        after=visit.arg("after") or None,
    )


def why(hit: SearchHit) -> str:
    """A hit's score and each signal's part of it, and which signals found it on their own."""
    parts = ", ".join(f"{name} {value:.3f}" for name, value in sorted(hit.signals.items(), key=lambda kv: -kv[1]))
    found = f"found by {', '.join(hit.evidence)}" if hit.evidence else "here by rank alone"
    return f"score {hit.score:.3f} ({parts}); {found}"


async def memories(visit: Visit) -> Response:
    flt = parse_filter(visit)
    params = {name: visit.arg(name) for name in FILTERS}
    params["agent"] = visit.agent
    text = visit.arg("q")
    mode = visit.arg("mode") or "hybrid"
    if text:
        search = model(
            SearchIn, query=text, kinds="narratives", mode=mode, limit=SEARCH_LIMIT, since=flt.since, until=flt.until
        )
        outcome = await visit.call(visit.service.search, visit.agent, search, source=None)
        ids = [hit.id for hit in outcome.hits if hit.kind == "narrative"]
        records = await visit.call(visit.service.memories_by_id, visit.agent, ids)
        kept = [
            (records[hit.id], why(hit)) for hit in outcome.hits if hit.id in records and flt.admits(records[hit.id])
        ]
        return visit.render(
            "memories.html", params=params, q=text, mode=mode, outcome=outcome, found=kept, listing=None
        )
    listing = await visit.call(visit.service.memories_page, visit.agent, flt)
    return visit.render("memories.html", params=params, q="", mode=mode, outcome=None, found=[], listing=listing)


ROUTES: list[tuple[str, list[str], PageFunction, bool]] = [("/memories", ["GET"], memories, False)]
