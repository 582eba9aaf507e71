"""Night drift: from one heavy memory, walk to distant but connected ones; ask the LLM for an unseen connection.

The seed is the heaviest current memory of the last 30 days that was not a seed in the last
week's drifts. Its neighbours are memories connected to it by a path the agent already has —
an adjacent soft cluster, a shared tag (topic), a shared named entity — of which the least
similar in meaning are kept: the connection worth finding is the one the embedding does not
already show. The LLM may answer that there is none (often the right answer); otherwise it may
write one insight narrative or open one thread. Nothing is forced.
"""

from __future__ import annotations

from typing import Any

from tideline_core.dream.answers import DriftAnswer
from tideline_core.dream.contract import StageContext, StageOutput
from tideline_core.dream.drift.kernel import most_distant, plan_drift
from tideline_core.dream.drift.store import connected as find_connected
from tideline_core.dream.drift.store import seed as find_seed
from tideline_core.dream.memories import shown
from tideline_core.dream.runner.runs import DONE, recent_runs
from tideline_core.store.embeddings import vectors_of
from tideline_core.store.narratives import load_narratives

SEED_REST_RUNS = 7  # a seed is not drawn again within this many drifts
NEIGHBOURS = 5
NO_LLM = "no LLM configured: set TIDELINE_LLM_URL and TIDELINE_LLM_MODEL to drift at night"


def drift(ctx: StageContext, agent_id: str) -> StageOutput:
    if ctx.ask is None:
        return StageOutput({"method": "skipped"}, skipped=NO_LLM)
    with ctx.db.read() as conn:
        rested = {
            int(run.outputs["seed"])
            for run in recent_runs(conn, agent_id, SEED_REST_RUNS, stage="drift")
            if run.status == DONE and run.undone_at is None and "seed" in run.outputs
        }
        seed = find_seed(conn, agent_id, rested)
        if seed is None:
            return StageOutput({"seed": None}, skipped="no current memory of the last 30 days to start from")
        connected = find_connected(conn, agent_id, seed)
        vectors = vectors_of(conn, "narrative", [seed.id, *connected], ctx.embedder.model) if ctx.embedder else {}
        picked = most_distant(seed.id, connected, vectors, NEIGHBOURS)
        records = load_narratives(conn, agent_id, picked)
    if not picked:
        return StageOutput({"seed": seed.id, "neighbours": 0}, skipped="the seed has no connected memories")
    neighbours = [{**shown(records[i], weights=False), "connected_by": connected[i]} for i in picked if i in records]
    answer = ctx.ask("drift", DriftAnswer, {"seed": shown(seed, weights=False), "neighbours": neighbours})
    plan = plan_drift(answer, seed, set(picked))
    figures: dict[str, Any] = {
        "seed": seed.id,
        "neighbours": len(neighbours),
        "connection": answer.connection,
        "wrote": answer.write,
        "model": ctx.ask.model,
        "prompts": dict(ctx.ask.versions),
    }
    return StageOutput(figures, plan=plan)
