"""What every embedder is: the Embedder protocol, the one vector normalization, and the null embedder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from tideline_core.errors import EmbedderUnavailable
from tideline_core.numeric import np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


class Embedder(Protocol):
    """Turns text into L2-normalized float32 rows. `model` names the vector space."""

    @property
    def model(self) -> str: ...

    def passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        """One row per query text; several texts go in one call (in parallel where the engine can)."""
        ...


def normalize(vectors: ArrayLike) -> np.ndarray:
    """Float32 with each row (the last axis) scaled to unit length; an all-zero row stays zero.

    The one place vectors are normalized: embedders return its output, and whatever combines
    vectors (a summed query, k-means centroids) passes the result through it again.
    """
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


class NoEmbedder:
    """Keyword-only operation: every embedding request says so."""

    model = "none"

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbedderUnavailable("no embedder is configured (TIDELINE_EMBEDDER=none)")

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        raise EmbedderUnavailable("no embedder is configured (TIDELINE_EMBEDDER=none)")
