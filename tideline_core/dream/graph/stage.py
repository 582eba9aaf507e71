"""The graph stage over the store: the entity graph rebuilt whole, with the entity-parse problems counted."""

from __future__ import annotations

from tideline_core.dream.contract import StageContext, StageOutput
from tideline_core.dream.graph.store import plan_entity_graph
from tideline_core.dream.plan import Plan

MAX_PROBLEMS = 20  # entity-parse problems listed in a result; the count covers all of them


def graph(ctx: StageContext, agent_id: str) -> StageOutput:
    rebuild = plan_entity_graph(ctx.db, agent_id, ctx.known_persons)
    built = rebuild.graph
    figures = {
        "nodes": len(built.nodes),
        "edges": len(built.edges),
        "problems": len(built.problems),
        "problem_samples": [
            {"narrative_id": p.narrative_id, "fragment": p.fragment, "reason": p.reason}
            for p in built.problems[:MAX_PROBLEMS]
        ],
    }
    return StageOutput(figures, plan=Plan((rebuild,)))
