"""Interim reciprocal-rank fusion (to be replaced by the measured fusion module)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def fuse(signals: Mapping[str, Mapping[K, float]], k: int = 60) -> list[tuple[K, float]]:
    fused: dict[K, float] = {}
    for values in signals.values():
        ordered = sorted(values.items(), key=lambda kv: (-kv[1], str(kv[0])))
        for rank, (key, _) in enumerate(ordered):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank + 1)
    return sorted(fused.items(), key=lambda kv: (-kv[1], str(kv[0])))
