"""Recurrence refresh and weight normalization over all of an agent's narratives (one definition each)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import bindparam, select, update

from tideline_core.dream.plan import Plan, Reweight
from tideline_core.dream.refresh.reweigh import ScoredNarrative, reweigh
from tideline_core.store.database import Database
from tideline_core.store.schema import Narrative, NarrativeTag
from tideline_core.text.dates import utcnow


@dataclass(frozen=True)
class RefreshReport:
    narratives: int
    changed: int


def refresh_plan(db: Database, agent_id: str) -> tuple[int, Plan]:
    """(narratives looked at, the plan that sets each changed one's recurrence and weight), for the dream runner."""
    scored = _scored(db, agent_id)
    return len(scored), Plan(tuple(Reweight(c.id, c.recurrence, c.weight) for c in reweigh(scored)))


def _scored(db: Database, agent_id: str) -> list[ScoredNarrative]:
    with db.read() as conn:
        tags: dict[int, list[str]] = defaultdict(list)
        for nid, tag in conn.execute(
            select(NarrativeTag.narrative_id, NarrativeTag.tag).where(NarrativeTag.agent_id == agent_id)
        ):
            tags[nid].append(tag)
        rows = conn.execute(
            select(
                Narrative.id,
                Narrative.created_at,
                Narrative.importance,
                Narrative.emotional,
                Narrative.unresolved,
                Narrative.recurrence,
                Narrative.weight,
            ).where(Narrative.agent_id == agent_id)
        ).all()
    return [
        ScoredNarrative(
            r.id, r.created_at, tuple(tags[r.id]), r.importance, r.emotional, r.unresolved, r.recurrence, r.weight
        )
        for r in rows
    ]


def refresh_weights(db: Database, agent_id: str) -> RefreshReport:
    """Fresh recurrence from tags, weights from the formula, anti-inflation on the newest 20. Idempotent."""
    scored = _scored(db, agent_id)
    changes = reweigh(scored)
    if changes:
        now = utcnow()
        statement = (
            update(Narrative)
            .where(Narrative.id == bindparam("nid"))
            .values(recurrence=bindparam("rec"), weight=bindparam("w"), updated_at=now)
        )
        with db.write() as conn:
            conn.execute(statement, [{"nid": c.id, "rec": c.recurrence, "w": c.weight} for c in changes])
    return RefreshReport(narratives=len(scored), changed=len(changes))
