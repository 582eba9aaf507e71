"""The refresh stage over the store: every narrative's recurrence and weight recomputed, planned as reweights."""

from __future__ import annotations

from tideline_core.dream.contract import StageContext, StageOutput
from tideline_core.dream.refresh.store import refresh_plan


def refresh(ctx: StageContext, agent_id: str) -> StageOutput:
    narratives, plan = refresh_plan(ctx.db, agent_id)
    return StageOutput({"narratives": narratives, "changed": len(plan)}, plan=plan)
