"""Night drift: from one heavy memory, walk to distant but connected ones; ask the LLM for an unseen connection.

The seed is the heaviest current memory of the last 30 days that was not a seed in the last
week's drifts. Its neighbours are memories connected to it by a path the agent already has —
an adjacent soft cluster, a shared tag (topic), a shared named entity — of which the least
similar in meaning are kept: the connection worth finding is the one the embedding does not
already show. The LLM may answer that there is none (often the right answer); otherwise it may
write one insight narrative or open one thread. Nothing is forced.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import numpy as np
from sqlalchemy import Connection, select

from tideline_core.dream.answers import DriftAnswer
from tideline_core.dream.memories import shown
from tideline_core.dream.plan import AddNarrative, Intent, Plan, PutThread
from tideline_core.dream.registry import StageContext, StageOutput
from tideline_core.dream.runs import DONE, recent_runs
from tideline_core.errors import InvalidInput
from tideline_core.inputs import NarrativeIn, ThreadIn
from tideline_core.records import NarrativeRecord
from tideline_core.store.embeddings import vectors_of
from tideline_core.store.narratives import load_narratives
from tideline_core.store.schema import EmbeddingClusterAdjacency, EmbeddingClusterMember, Narrative, NarrativeTag
from tideline_core.timeutil import utcnow

SEED_DAYS = 30
SEED_REST_RUNS = 7  # a seed is not drawn again within this many drifts
NEIGHBOURS = 5
POOL = 300  # connected candidates considered before picking the most distant
SKIPPED_KINDS = ("dream", "digest")
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
        seed = _seed(conn, agent_id, rested)
        if seed is None:
            return StageOutput({"seed": None}, skipped="no current memory of the last 30 days to start from")
        connected = _connected(conn, agent_id, seed)
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


def plan_drift(answer: DriftAnswer, seed: NarrativeRecord, neighbour_ids: set[int]) -> Plan:
    """The drift's answer as a plan; an id it was not shown refuses it whole."""
    allowed = neighbour_ids | {seed.id}
    for i, narrative_id in enumerate(answer.linked_ids):
        if narrative_id not in allowed:
            raise InvalidInput(f"linked_ids[{i}]", f"memory {narrative_id} was not the seed or a neighbour shown")
    linked = ", ".join(f"#{i}" for i in sorted(set(answer.linked_ids) | {seed.id}))
    intents: list[Intent] = []
    if answer.write == "insight":
        intents.append(
            AddNarrative(
                NarrativeIn(
                    gesture=answer.insight,
                    context=f"Found drifting at night from memory #{seed.id}; connects {linked}.",
                    cognition_direction=answer.explanation,
                    narrative_type="insight",
                    tags=["drift", *seed.tags[:3]],
                ),
                origin="llm",
            )
        )
    elif answer.write == "thread":
        intents.append(PutThread(ThreadIn(title=answer.thread_title, content=f"{answer.explanation} ({linked})")))
    return Plan(tuple(intents))


def _seed(conn: Connection, agent_id: str, rested: set[int]) -> NarrativeRecord | None:
    since = utcnow() - timedelta(days=SEED_DAYS)
    ids = conn.execute(
        select(Narrative.id)
        .where(
            Narrative.agent_id == agent_id,
            Narrative.created_at >= since,
            Narrative.superseded_by.is_(None),
            Narrative.narrative_type.not_in(SKIPPED_KINDS),
        )
        .order_by(Narrative.weight.desc(), Narrative.id.desc())
        .limit(len(rested) + 1)
    ).scalars()
    for narrative_id in ids:
        if narrative_id not in rested:
            return load_narratives(conn, agent_id, [narrative_id]).get(narrative_id)
    return None


def _current(conn: Connection, agent_id: str, ids: set[int], exclude: int) -> set[int]:
    if not ids:
        return set()
    rows = conn.execute(
        select(Narrative.id).where(
            Narrative.agent_id == agent_id,
            Narrative.id.in_(sorted(ids)[:2_000]),
            Narrative.superseded_by.is_(None),
            Narrative.narrative_type.not_in(SKIPPED_KINDS),
        )
    ).scalars()
    return {i for i in rows if i != exclude}


def _connected(conn: Connection, agent_id: str, seed: NarrativeRecord) -> dict[int, str]:
    """Current memories connected to the seed: {id: how}, the first way found (clusters, tags, entities)."""
    found: dict[int, str] = {}
    own = set(
        conn.execute(
            select(EmbeddingClusterMember.cluster_id).where(EmbeddingClusterMember.narrative_id == seed.id)
        ).scalars()
    )
    if own:
        pairs = conn.execute(
            select(EmbeddingClusterAdjacency.cluster_a, EmbeddingClusterAdjacency.cluster_b).where(
                EmbeddingClusterAdjacency.agent_id == agent_id
            )
        ).all()
        adjacent = {b for a, b in pairs if a in own} | {a for a, b in pairs if b in own}
        adjacent -= own
        members = conn.execute(
            select(EmbeddingClusterMember.narrative_id, EmbeddingClusterMember.cluster_id)
            .where(EmbeddingClusterMember.cluster_id.in_(sorted(adjacent)))
            .limit(POOL)
        ).all()
        for narrative_id in _current(conn, agent_id, {m for m, _ in members}, seed.id):
            found.setdefault(narrative_id, "an adjacent cluster of meaning")
    if seed.tags:
        rows = conn.execute(
            select(NarrativeTag.narrative_id, NarrativeTag.tag)
            .where(NarrativeTag.agent_id == agent_id, NarrativeTag.tag.in_(list(seed.tags)))
            .order_by(NarrativeTag.narrative_id)
            .limit(POOL)
        ).all()
        current = _current(conn, agent_id, {n for n, _ in rows}, seed.id)
        for narrative_id, tag in rows:
            if narrative_id in current:
                found.setdefault(narrative_id, f"the tag {tag}")
    names = {e.lower(): e for e in seed.related_entities}
    if names:
        mentions = conn.execute(
            select(Narrative.id, Narrative.related_entities)
            .where(
                Narrative.agent_id == agent_id,
                Narrative.superseded_by.is_(None),
                Narrative.narrative_type.not_in(SKIPPED_KINDS),
                Narrative.id != seed.id,
            )
            .order_by(Narrative.id.desc())
            .limit(5_000)
        ).all()
        for narrative_id, entities in mentions:
            shared = sorted(names[e.lower()] for e in entities or () if e.lower() in names)
            if shared:
                found.setdefault(narrative_id, f"the name {shared[0]}")
    return found


def most_distant(
    seed_id: int, connected: Mapping[int, str], vectors: Mapping[int, np.ndarray], count: int
) -> list[int]:
    """The `count` connected memories least similar to the seed (without vectors: the oldest ids first)."""
    if seed_id not in vectors:
        return sorted(connected)[:count]
    seed = vectors[seed_id]
    scored = sorted(connected, key=lambda i: (float(np.dot(vectors[i], seed)) if i in vectors else 2.0, i))
    return scored[:count]
