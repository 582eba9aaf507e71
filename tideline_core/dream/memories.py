"""What the night's LLM stages look at: the day's narratives (since the stage last ran), shown as data."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select

from tideline_core.domain.records import NarrativeRecord
from tideline_core.dream.runner.runs import last_done
from tideline_core.store.narratives import load_narratives
from tideline_core.store.schema import Narrative
from tideline_core.text.dates import as_utc, utcnow

DAY = timedelta(hours=24)
MAX_DAY_MEMORIES = 60  # the heaviest of the day, when it wrote more: a prompt stays a few thousand tokens
FIELD_CHARS = 600  # one field's text as shown to the LLM


def since_last(conn: Connection, agent_id: str, stage: str, now: datetime | None = None) -> datetime:
    """Where the stage's "day" starts: when it last finished, or 24 hours ago when it never ran (or long ago)."""
    now = now or utcnow()
    run = last_done(conn, agent_id, stage)
    start = now - DAY
    if run is not None and run.finished_at is not None:
        start = max(start - 6 * DAY, as_utc(run.started_at))  # a missed night still looks back at most a week
    return start


def day_memories(
    conn: Connection, agent_id: str, since: datetime, *, limit: int = MAX_DAY_MEMORIES, kinds: Sequence[str] = ()
) -> list[NarrativeRecord]:
    """The agent's current narratives written since `since`, heaviest first (ties: newest first)."""
    query = select(Narrative.id).where(
        Narrative.agent_id == agent_id, Narrative.created_at >= since, Narrative.superseded_by.is_(None)
    )
    if kinds:
        query = query.where(Narrative.narrative_type.in_(list(kinds)))
    else:
        query = query.where(Narrative.narrative_type.not_in(["dream", "digest"]))
    ids = list(
        conn.execute(
            query.order_by(Narrative.weight.desc(), Narrative.created_at.desc(), Narrative.id.desc()).limit(limit)
        ).scalars()
    )
    found = load_narratives(conn, agent_id, ids)
    return [found[i] for i in ids if i in found]


def shown(n: NarrativeRecord, *, weights: bool = True) -> dict[str, Any]:
    """One narrative as data for a prompt: its id, text fields (cut), tags, people, when, and its scores."""
    item: dict[str, Any] = {"id": n.id, "type": n.narrative_type, "gesture": _cut(n.gesture)}
    for name in ("context", "moment", "cognition_direction"):
        value = getattr(n, name)
        if value:
            item[name] = _cut(value)
    if n.tags:
        item["tags"] = list(n.tags)
    if n.entities_role:
        item["entities_role"] = _cut(n.entities_role)
    item["when"] = as_utc(n.occurred_at).strftime("%Y-%m-%d %H:%M UTC")
    if weights:
        item.update(importance=n.importance, emotional=n.emotional, unresolved=n.unresolved, weight=round(n.weight, 3))
    return item


def _cut(text: str) -> str:
    return text if len(text) <= FIELD_CHARS else text[:FIELD_CHARS].rstrip() + "…"
