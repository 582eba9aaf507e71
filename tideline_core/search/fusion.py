"""Score fusion for hybrid search: per-signal candidate scores in, one ranked list out.

Pure: plain mappings in, plain tuples out, no database, no randomness. The properties the tests
pin down:

- **order-insensitive**: only the *set* of (doc, score) pairs of each signal matters, never the
  order in which candidates or signals are given;
- **monotone**: raising one document's score in one signal never lowers its fused rank (the
  normalizations offered here are all monotone in that sense, see ``_normalize``);
- **deterministic ties**: equal fused scores are ordered by doc id (``sort_key`` of the id).

Methods:

- ``"minmax"`` (default): each signal mapped to [0, 1] by (s - min) / (max - min) over its own
  candidates (all equal → 1.0), then a weighted sum. ``floors`` pin the min of a signal whose scores
  have a meaningful zero (BM25: 0; a dense margin: the floor of texts unrelated to the query): a score at
  or below its floor counts 0, and a signal none of whose candidates clears it adds nothing.
  A document missing from a signal gets 0 from it. This is score-level (convex-combination)
  fusion: unlike RRF it keeps *how much* a document leads, so a confident keyword hit is not
  drowned by a dense list of near-equal cosines.
- ``flat`` (either method): a signal whose ten best raw scores lie within ``flat[name]`` of each
  other ranks its top by noise, and min-max would stretch that noise to the full [0, 1]; its weight
  shrinks in proportion (a dense view's top ten cosines within 0.005: nothing told apart). The
  weight follows the spread, so ``monotone`` holds with ``flat`` only where a raise leaves a flat
  signal's top-ten spread as it was.
- ``trust`` (min-max): a signal's weight times its confidence in this query to the power
  ``trust[name]``; the confidence is how far its best candidate stands above the next ones (one less
  the mean normalized score of ranks 2 to ten), so a keyword view that found one rare word's rows
  weighs more than one whose top ten matched common words alike, and a dense view that separates
  nothing weighs less. Like ``flat`` it follows the top ten, with the same reservation on ``monotone``.
- ``"rrf"``: weighted reciprocal-rank fusion, weight / (rrf_k + rank), rank 1-based, tied scores
  share the best rank.

Each hit carries its per-signal contributions (what was added to its fused score), for
``--explain``.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

METHODS = ("minmax", "rrf")
FLAT_DEPTH = 10  # the top a signal must tell apart for its full weight


@dataclass(frozen=True)
class FusedHit:
    doc_id: Hashable
    score: float
    contributions: dict[str, float] = field(default_factory=dict)

    def __iter__(self):  # (doc_id, score, contributions) unpacking
        return iter((self.doc_id, self.score, self.contributions))


def sort_key(doc_id: Hashable) -> tuple[int, Any]:
    """A total order over ids of mixed types: numbers before strings, each in natural order."""
    if isinstance(doc_id, bool):
        return (2, str(doc_id))
    if isinstance(doc_id, (int, float)):
        return (0, doc_id)
    if isinstance(doc_id, tuple):
        return (1, tuple(sort_key(x) for x in doc_id))
    return (2, str(doc_id))


def _normalize(
    scores: Mapping[Hashable, float], method: str, rrf_k: float, floor: float | None = None
) -> dict[Hashable, float]:
    """One signal's raw scores → contributions before weighting; monotone in each raw score."""
    if not scores:
        return {}
    if method == "minmax":
        hi = max(scores.values())
        if floor is not None:
            if hi <= floor:
                return dict.fromkeys(scores, 0.0)
            return {d: max(0.0, s - floor) / (hi - floor) for d, s in scores.items()}
        lo = min(scores.values())
        span = hi - lo
        if span <= 0.0:
            return dict.fromkeys(scores, 1.0)
        return {d: (s - lo) / span for d, s in scores.items()}
    if method == "rrf":
        # competition ranking: tied scores share the best rank, so ties never depend on input order
        ordered = sorted(scores.values(), reverse=True)
        first_rank: dict[float, int] = {}
        for i, s in enumerate(ordered):
            first_rank.setdefault(s, i + 1)
        return {d: 1.0 / (rrf_k + first_rank[s]) for d, s in scores.items()}
    raise ValueError(f"unknown fusion method {method!r}; expected one of {METHODS}")


def combine(
    signals: Mapping[str, Mapping[Hashable, float]],
    *,
    weights: Mapping[str, float] | None = None,
    method: str = "minmax",
    rrf_k: float = 60.0,
    floors: Mapping[str, float] | None = None,
    flat: Mapping[str, float] | None = None,
    trust: Mapping[str, float] | None = None,
) -> tuple[dict[Hashable, float], dict[Hashable, dict[str, float]]]:
    """The fused score and per-signal contributions of every candidate, unsorted (see ``fuse``)."""
    floors = floors or {}
    flat = flat or {}
    trust = trust or {}
    if method not in METHODS:
        raise ValueError(f"unknown fusion method {method!r}; expected one of {METHODS}")
    weights = weights or {}
    for name, w in weights.items():
        if w < 0 or w != w:
            raise ValueError(f"fusion weight for {name!r} must be a non-negative number, got {w!r}")
    fused: dict[Hashable, float] = {}
    parts: dict[Hashable, dict[str, float]] = {}
    for name in sorted(signals):
        w = float(weights.get(name, 1.0)) * _told_apart(signals[name], flat.get(name, 0.0))
        normalized = _normalize(signals[name], method, rrf_k, floors.get(name))
        if trust.get(name) and method == "minmax":
            w *= confidence(normalized) ** trust[name]
        for doc_id, value in normalized.items():
            contribution = w * value
            fused[doc_id] = fused.get(doc_id, 0.0) + contribution
            parts.setdefault(doc_id, {})[name] = contribution
    return fused, parts


def interleave(rankings: Sequence[Sequence[Hashable]], limit: int) -> list[Hashable]:
    """Round robin over `rankings` (first place of each, then second places, …), each id once, `limit` at most.

    Fair to rankings whose scores are on different scales: a compound question's parts each get
    their best rows in, however much more one part's words match than the other's.
    """
    out: dict[Hashable, None] = {}
    for place in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if place < len(ranking):
                out.setdefault(ranking[place])
                if len(out) >= limit:
                    return list(out)
    return list(out)


def _told_apart(scores: Mapping[Hashable, float], flat: float) -> float:
    """1.0 for a signal whose top `FLAT_DEPTH` raw scores spread by `flat` or more, less the closer they lie."""
    if flat <= 0.0 or len(scores) <= FLAT_DEPTH:
        return 1.0
    top = heapq.nlargest(FLAT_DEPTH, scores.values())
    return min(1.0, (top[0] - top[-1]) / flat)


def confidence(normalized: Mapping[Hashable, float]) -> float:
    """How far a signal's best candidate stands above ranks 2 to `FLAT_DEPTH`: 1 less their mean min-max score."""
    top = heapq.nlargest(FLAT_DEPTH, normalized.values())
    if len(top) < 2:
        return 1.0
    return max(0.0, 1.0 - sum(top[1:]) / (len(top) - 1))


def confidence_of(scores: Mapping[Hashable, float], floor: float | None = None) -> float:
    """A signal's `confidence` over its raw scores, min-max scaled as `combine` scales them."""
    return confidence(_normalize(scores, "minmax", 0.0, floor))


def fuse(
    signals: Mapping[str, Mapping[Hashable, float]],
    *,
    weights: Mapping[str, float] | None = None,
    method: str = "minmax",
    rrf_k: float = 60.0,
    floors: Mapping[str, float] | None = None,
    flat: Mapping[str, float] | None = None,
    trust: Mapping[str, float] | None = None,
    top_k: int | None = None,
) -> list[FusedHit]:
    """Fuse per-signal candidate scores into one ranking, best first.

    ``signals``: signal name → {doc_id: raw score} (higher is better). ``weights``: signal name →
    non-negative weight (missing signals weigh 1.0). Signals with weight 0 still appear in the
    contributions (as 0.0) so an explanation shows every signal that was consulted.
    ``floors``: signal name → a known lowest possible score (BM25: 0.0) used as the minimum of
    min-max scaling, so a signal whose candidates all score alike still tells strong from weak;
    without one, the lowest candidate score is the minimum.
    """
    fused, parts = combine(signals, weights=weights, method=method, rrf_k=rrf_k, floors=floors, flat=flat, trust=trust)
    return [FusedHit(d, score, parts[d]) for d, score in rank(fused, top_k)]


def spread_to_neighbours(
    scores: Mapping[Hashable, float],
    neighbours: Mapping[Hashable, tuple[Hashable, ...] | list[Hashable]],
    *,
    gamma: float = 0.2,
) -> dict[Hashable, float]:
    """Let a strong hit lift the turns beside it: s'(d) = s(d) + gamma * max(s(n) for n beside d).

    ``neighbours`` maps a doc to the docs adjacent to it in its conversation (same session);
    docs without neighbours keep their score. With 0 <= gamma <= 1 this stays monotone: raising
    d by x raises d by x and any neighbour by at most gamma * x.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be within [0, 1], got {gamma!r}")
    out: dict[Hashable, float] = {}
    for doc_id, score in scores.items():
        lifted = [scores[n] for n in neighbours.get(doc_id, ()) if n in scores]
        out[doc_id] = score + gamma * max(lifted) if lifted and max(lifted) > 0 else score
    return out


def rank(
    scores: Mapping[Hashable, float], top_k: int | None = None, *, first: Collection[Hashable] = ()
) -> list[tuple[Hashable, float]]:
    """Scores → (doc_id, score) best first; among equal scores the docs in `first` (a search's rows with evidence of
    their own) before the others, then by doc id."""
    items = list(scores.items())
    if top_k is not None and 0 <= top_k < len(items):
        if top_k == 0:
            return []
        # Only documents scoring at least the k-th best can be in the top k: sort those alone.
        kth = heapq.nlargest(top_k, (s for _, s in items))[-1]
        items = [(d, s) for d, s in items if s >= kth]
    ranked = sorted(items, key=lambda kv: (-kv[1], kv[0] not in first, sort_key(kv[0])))
    return ranked if top_k is None else ranked[: max(top_k, 0)]
