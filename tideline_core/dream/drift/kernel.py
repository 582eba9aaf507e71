"""The drift's pure part: the connected memories least similar to the seed, and its answer as a plan."""

from __future__ import annotations

from collections.abc import Mapping

from tideline_core.domain.inputs import NarrativeIn, ThreadIn
from tideline_core.domain.records import NarrativeRecord
from tideline_core.dream.answers import DriftAnswer
from tideline_core.dream.plan import AddNarrative, Intent, Plan, PutThread
from tideline_core.errors import InvalidInput
from tideline_core.numeric import np


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


def most_distant(
    seed_id: int, connected: Mapping[int, str], vectors: Mapping[int, np.ndarray], count: int
) -> list[int]:
    """The `count` connected memories least similar to the seed (without vectors: the oldest ids first)."""
    if seed_id not in vectors:
        return sorted(connected)[:count]
    seed = vectors[seed_id]
    scored = sorted(connected, key=lambda i: (float(np.dot(vectors[i], seed)) if i in vectors else 2.0, i))
    return scored[:count]
