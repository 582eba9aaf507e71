"""Narrative weight, recurrence and anti-inflation: one definition of each.

- Weight = (importance×0.35 + emotional×0.25 + recurrence×0.25 + unresolved×0.15) / 5, from
  integer scores 1–5, so it lies in [0.2, 1.0] and a default memory (all threes) weighs 0.6.
- Recurrence: how many *other* narratives of the agent share at least one tag, mapped 0→1,
  1–2→2, 3–5→3, 6–10→4, ≥11→5; a narrative without tags gets 3. Set at write time and refreshed
  for the whole agent by the dream's refresh stage.
- Anti-inflation: when the mean weight of an agent's 20 newest narratives exceeds 0.7, those 20
  are scaled by 0.6/mean. It never raises a weight, keeps every weight in [0, 1] and is idempotent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

WEIGHT_FACTORS = {"importance": 0.35, "emotional": 0.25, "recurrence": 0.25, "unresolved": 0.15}
INFLATION_WINDOW = 20
INFLATION_CEILING = 0.7
INFLATION_TARGET = 0.6


def weight(importance: int, emotional: int, recurrence: int, unresolved: int) -> float:
    """Scores 1–5 → weight in [0.2, 1.0]; all threes give exactly 0.6."""
    raw = (
        importance * WEIGHT_FACTORS["importance"]
        + emotional * WEIGHT_FACTORS["emotional"]
        + recurrence * WEIGHT_FACTORS["recurrence"]
        + unresolved * WEIGHT_FACTORS["unresolved"]
    )
    return round(raw / 5, 6)


SATURATED = 11  # from this many other narratives sharing a tag, recurrence is 5 whatever the count


def recurrence_score(shared_count: int | None) -> int:
    """Other narratives sharing a tag → 1–5; None means the narrative has no tags (→ 3)."""
    if shared_count is None:
        return 3
    if shared_count <= 0:
        return 1
    if shared_count <= 2:
        return 2
    if shared_count <= 5:
        return 3
    if shared_count <= 10:
        return 4
    return 5


def deflate(weights: Sequence[float]) -> list[float]:
    """Anti-inflation over an agent's most recent narratives (newest first, window of 20).

    When their mean exceeds 0.7 they are scaled by 0.6/mean. Never raises a weight, keeps
    every result in [0, 1], and applying it twice changes nothing more (the scaled mean is 0.6).
    """
    window = list(weights[:INFLATION_WINDOW])
    if not window:
        return list(weights)
    mean = sum(window) / len(window)
    if mean <= INFLATION_CEILING:
        return list(weights)
    factor = INFLATION_TARGET / mean
    scaled = [min(1.0, max(0.0, round(w * factor, 6))) for w in window]
    return scaled + list(weights[INFLATION_WINDOW:])


# recurrence_score saturates at this many sharing narratives: counting further changes nothing.
_RECURRENCE_SATURATION = 11


def recurrence_scores(tags_by_narrative: Mapping[int, Sequence[str]]) -> dict[int, int]:
    """`recurrence_score` of every narrative (tags by narrative id in), in time linear in the tags.

    Counting the other narratives behind every tag of every narrative grows with N² when tags are
    popular (26 s for 100k narratives); counting stops once the score can no longer rise.
    """
    holders: dict[str, set[int]] = {}
    for narrative_id, tags in tags_by_narrative.items():
        for tag in set(tags):
            holders.setdefault(tag, set()).add(narrative_id)
    scores: dict[int, int] = {}
    for narrative_id, tags in tags_by_narrative.items():
        if not tags:
            scores[narrative_id] = recurrence_score(None)
            continue
        distinct = set(tags)
        # A tag held by the narrative and 11 others already saturates the score.
        if max(len(holders[tag]) for tag in distinct) > _RECURRENCE_SATURATION:
            scores[narrative_id] = recurrence_score(_RECURRENCE_SATURATION)
            continue
        others: set[int] = set()
        for tag in distinct:
            others |= holders[tag]
        others.discard(narrative_id)
        scores[narrative_id] = recurrence_score(len(others))
    return scores
