"""A deterministic stand-in for e5 in store tests: a hashed bag of analyzed words, 384 dimensions, L2-normalized.

384 is the HNSW column's size, so its vectors take PostgreSQL's pgvector path as e5's do, and two
texts are near exactly when they share words.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from tideline_core.text.terms import analyze

DIM = 384


class WordsEmbedder:
    """Hashed bag of analyzed words, L2-normalized."""

    model = "test-words"
    dim = DIM

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for token in analyze(text):
            v[zlib.crc32(token.encode()) % self.dim] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts])

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        return self.passages(texts)
