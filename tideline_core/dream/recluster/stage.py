"""The recluster stage over the store: topic clusters always, soft clusters when there is an embedder."""

from __future__ import annotations

from typing import Any

from tideline_core.dream.contract import StageContext, StageOutput
from tideline_core.dream.plan import Plan
from tideline_core.dream.recluster.store import plan_soft_clusters, plan_topics


def recluster(ctx: StageContext, agent_id: str) -> StageOutput:
    topics, narratives = plan_topics(ctx.db, agent_id)
    figures: dict[str, Any] = {"narratives": narratives, "topic_clusters": len(topics.clusters)}
    if ctx.embedder is None:
        figures.update(soft_clusters=0, soft_clusters_skipped="no embedder configured")
        return StageOutput(figures, plan=Plan((topics,)))
    soft, embedded = plan_soft_clusters(ctx.db, agent_id, ctx.embedder.model)
    figures.update(soft_clusters=0 if soft.clusters is None else soft.clusters.k, embedded_narratives=embedded)
    return StageOutput(figures, plan=Plan((topics, soft)))
