"""The symbolic dream stage: 3–5 symbols from the day's memories woven into a short dream and a self-reflection.

The dream is kept as a narrative of type `dream`, importance 1 and tag `dream` (with its symbols
as tags), so it never outweighs what happened, and the reflection is its cognition direction.
A day with fewer than three memories does not dream.
"""

from __future__ import annotations

from tideline_core.domain.inputs import MAX_GESTURE, NarrativeIn
from tideline_core.dream.answers import DreamAnswer
from tideline_core.dream.contract import StageContext, StageOutput
from tideline_core.dream.memories import day_memories, shown, since_last
from tideline_core.dream.plan import AddNarrative, Plan

DAY_MEMORIES = 15
MIN_MEMORIES = 3
NO_LLM = "no LLM configured: set TIDELINE_LLM_URL and TIDELINE_LLM_MODEL to dream"


def symbolic(ctx: StageContext, agent_id: str) -> StageOutput:
    if ctx.ask is None:
        return StageOutput({"method": "skipped"}, skipped=NO_LLM)
    with ctx.db.read() as conn:
        day = day_memories(conn, agent_id, since_last(conn, agent_id, "symbolic"), limit=DAY_MEMORIES)
    if len(day) < MIN_MEMORIES:
        return StageOutput({"memories": len(day)}, skipped=f"fewer than {MIN_MEMORIES} new memories to dream of")
    answer = ctx.ask("dream", DreamAnswer, {"memories": [shown(n, weights=False) for n in day]}, day=ctx.day)
    symbols = list(dict.fromkeys(s for s in answer.symbols if s.lower() != "dream"))
    dream = AddNarrative(
        NarrativeIn(
            gesture=answer.dream[:MAX_GESTURE],
            context=f"A dream of {ctx.day} woven from {len(day)} memories: " + ", ".join(f"#{n.id}" for n in day),
            cognition_direction=answer.reflection,
            narrative_type="dream",
            importance=1,
            emotional=3,
            unresolved=1,
            tags=["dream", *symbols],
        ),
        origin="llm",
    )
    figures = {"memories": len(day), "symbols": symbols, "model": ctx.ask.model, "prompts": dict(ctx.ask.versions)}
    return StageOutput(figures, plan=Plan((dream,)))
