"""Recurrence refresh and weight normalization for one agent: scores and tags in, changed weights out.

Pure: frozen `ScoredNarrative` records in, the `WeightChange`s to store out. The weight, recurrence
and anti-inflation rules themselves are defined once, in `tideline_core.domain.scoring`.

How deflation stays idempotent. A stored weight is never an input. The target weight of every
narrative is a pure function of its scores, every narrative's tags, and the creation order:

    recurrence = recurrence_scores(every narrative's tags)[id]    fresh, from tags
    formula    = weight(importance, emotional, recurrence, unresolved)
    target     = deflate(formula weights, newest first)           only the 20 newest can change

So a second run computes the same targets and finds nothing to change, and deflation can never
compound (it always starts from formula weights, never from an already-deflated stored weight).
The consequences, by design: a narrative that leaves the 20-newest window returns to its formula
weight; a weight written by someone else (not from the scores) is put back to its target.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from tideline_core.domain.scoring import deflate, recurrence_scores, weight

# Stored weights carry six decimals (scoring rounds to them); anything closer counts as equal.
_TOLERANCE = 5e-7


@dataclass(frozen=True, slots=True)
class ScoredNarrative:
    """What reweighing needs of a narrative: its scores, its tags, when it was created, and the
    recurrence and weight currently stored (only to tell what changed)."""

    id: int
    created_at: datetime
    tags: tuple[str, ...]
    importance: int
    emotional: int
    unresolved: int
    recurrence: int
    weight: float


@dataclass(frozen=True, slots=True)
class WeightChange:
    """Store these for narrative `id`."""

    id: int
    recurrence: int
    weight: float


@dataclass(frozen=True, slots=True)
class Target:
    """The weight a narrative should have, and the formula weight before deflation."""

    id: int
    recurrence: int
    formula_weight: float
    weight: float


def targets(narratives: Iterable[ScoredNarrative]) -> list[Target]:
    """Target recurrence and weight of every narrative, newest first (created_at, then id)."""
    ordered = sorted(narratives, key=lambda n: (n.created_at, n.id), reverse=True)
    scores = recurrence_scores({n.id: n.tags for n in ordered})
    recurrences = [scores[n.id] for n in ordered]
    formula = [weight(n.importance, n.emotional, r, n.unresolved) for n, r in zip(ordered, recurrences, strict=True)]
    deflated = deflate(formula)
    return [Target(n.id, r, f, d) for n, r, f, d in zip(ordered, recurrences, formula, deflated, strict=True)]


def reweigh(narratives: Iterable[ScoredNarrative]) -> list[WeightChange]:
    """All of one agent's narratives in; only the narratives whose recurrence or weight must change out.

    Every returned weight is ≤ its formula weight (deflation only lowers) and in [0, 1]; applying
    the changes and running again returns nothing. Ids are assumed distinct (one agent's rows).
    """
    records = list(narratives)
    current = {n.id: n for n in records}
    changes: list[WeightChange] = []
    for target in targets(records):
        stored = current[target.id]
        if stored.recurrence != target.recurrence or abs(stored.weight - target.weight) > _TOLERANCE:
            changes.append(WeightChange(target.id, target.recurrence, target.weight))
    changes.sort(key=lambda c: c.id)
    return changes
