"""Source-link backfill: for narratives without links, the nearby context turns most like them.

Pure: anchors (ids and times) plus aligned embedding matrices in, `InferredLink`s out. It serves
the scanner's track A (narratives with no source links): every proposed link is marked inferred
and carries its score, so a person can tell it from a link the agent wrote.

Defaults, measured with multilingual-e5-small passages: a narrative against the turn it
summarizes scored 0.88–0.96, against unrelated turns of the same language up to 0.89 (Chinese
bunches highest). No single threshold separates those, so a candidate must clear the absolute
`threshold` *and* lie within `margin` of the narrative's best candidate; the ±6 h window does
the rest. Re-tune both on real data (`shared/eval/`) when the embedder changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from tideline_core.embedding import normalize
from tideline_core.errors import InvalidInput
from tideline_core.timeutil import as_utc

WINDOW = timedelta(hours=6)
THRESHOLD = 0.82
MARGIN = 0.03
TOP_K = 3


@dataclass(frozen=True, slots=True)
class NarrativeAnchor:
    """A narrative that may need links: when it happened and which links it already has."""

    id: int
    occurred_at: datetime
    explicit_links: bool = False
    inferred_context_ids: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class TurnAnchor:
    id: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class InferredLink:
    narrative_id: int
    context_id: int
    score: float  # cosine similarity of the two embeddings
    inferred: bool = True


def propose_links(
    narratives: Sequence[NarrativeAnchor],
    narrative_vectors: np.ndarray,
    turns: Sequence[TurnAnchor],
    turn_vectors: np.ndarray,
    *,
    window: timedelta = WINDOW,
    threshold: float = THRESHOLD,
    margin: float = MARGIN,
    top_k: int = TOP_K,
) -> list[InferredLink]:
    """Links for each narrative without explicit links: turns created within ±`window` of its
    `occurred_at`, scoring ≥ `threshold` and ≥ (best score − `margin`), at most `top_k`, best first.

    Row i of `narrative_vectors` belongs to narratives[i], row j of `turn_vectors` to turns[j].
    Links the narrative already has (`inferred_context_ids`) are not proposed again, so applying
    the result and running again proposes nothing new. Ordered by narrative id, then score.
    """
    n_matrix = _unit(narrative_vectors, len(narratives), "narrative_vectors")
    t_matrix = _unit(turn_vectors, len(turns), "turn_vectors")
    if len(narratives) and len(turns) and n_matrix.shape[1] != t_matrix.shape[1]:
        raise InvalidInput(
            "turn_vectors", f"dimension {t_matrix.shape[1]} differs from the narratives' {n_matrix.shape[1]}"
        )
    order = sorted(range(len(turns)), key=lambda j: (as_utc(turns[j].created_at), turns[j].id))
    times = np.array([as_utc(turns[j].created_at).timestamp() for j in order], dtype=np.float64)
    turn_ids = np.array([turns[j].id for j in order], dtype=np.int64)
    # Rows usually arrive in time order already (the store sorts them); copy only when they do not.
    by_time = t_matrix if order == sorted(order) else t_matrix[order]
    links: list[InferredLink] = []
    for i, narrative in sorted(enumerate(narratives), key=lambda item: item[1].id):
        if narrative.explicit_links:
            continue
        at = as_utc(narrative.occurred_at).timestamp()
        lo = int(np.searchsorted(times, at - window.total_seconds(), side="left"))
        hi = int(np.searchsorted(times, at + window.total_seconds(), side="right"))
        if lo >= hi:
            continue
        scores = by_time[lo:hi] @ n_matrix[i]
        floor = max(threshold, float(scores.max()) - margin)
        keep = np.flatnonzero(scores >= floor)
        keep = keep[np.lexsort((turn_ids[lo + keep], -scores[keep]))][:top_k]
        links += [
            InferredLink(narrative.id, int(turn_ids[lo + j]), round(float(scores[j]), 6))
            for j in keep
            if int(turn_ids[lo + j]) not in narrative.inferred_context_ids
        ]
    return links


def _unit(vectors: np.ndarray, rows: int, name: str) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if rows == 0 and matrix.size == 0:
        return matrix.reshape(0, matrix.shape[-1] if matrix.ndim == 2 else 0)
    if matrix.ndim != 2 or matrix.shape[0] != rows:
        raise InvalidInput(name, f"must be a 2-d array with one row per record; got shape {matrix.shape} for {rows}")
    return normalize(matrix)
