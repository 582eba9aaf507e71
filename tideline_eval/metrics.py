"""Recall@k and latency percentiles: pure arithmetic over ranked ids and gold ids."""

from __future__ import annotations

from collections.abc import Sequence


def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """|top-k ∩ gold| / |gold| (gold de-duplicated); an empty gold set is not a question (ValueError)."""
    wanted = set(gold)
    if not wanted:
        raise ValueError("recall needs at least one gold id")
    return len(set(ranked[:k]) & wanted) / len(wanted)


def dedupe(ranked: Sequence[str]) -> list[str]:
    """Keep the first occurrence of each id (session-level rankings repeat sessions)."""
    return list(dict.fromkeys(ranked))


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sample."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
