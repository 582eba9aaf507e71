"""An embedding service over HTTP: OpenAI-compatible `/v1/embeddings` or bge-m3 style `/embed_batch`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tideline_core.embedding.base import normalize
from tideline_core.errors import ConfigurationError, EmbedderUnavailable
from tideline_core.numeric import np

if TYPE_CHECKING:
    import httpx


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
        import httpx  # here, not above: a process that never embeds over HTTP (the hook) does not pay for it

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
        return normalize(np.asarray(rows, dtype=np.float32).reshape(len(rows), -1))

    def _post(self, texts: Sequence[str], timeout: float | None, retries: int) -> np.ndarray:
        import httpx

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
