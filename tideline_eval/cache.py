"""An embedding cache for repeated evaluation runs: vectors kept in a SQLite file, keyed by model, role and text."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tideline_core.embedding import Embedder


class CachedEmbedder:
    """`inner`'s vectors, computed once per (model, passage/query, text) and then read from `path`.

    Only for measuring: a corpus loaded a second time costs no model pass, while the query path is
    timed as usual (a cached query reports no model time). `misses` says what was computed.
    """

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.model = inner.model
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False)
        self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self._lock = threading.Lock()
        self.misses = 0

    def _key(self, role: str, text: str) -> str:
        return hashlib.sha256(f"{self.model}\0{role}\0{text}".encode()).hexdigest()

    def _cached(self, role: str, texts: Sequence[str], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        keys = [self._key(role, t) for t in texts]
        with self._lock:
            found = {
                key: np.frombuffer(blob, dtype=np.float32)
                for key in set(keys)
                for (blob,) in self._conn.execute("SELECT vector FROM vectors WHERE key = ?", (key,))
            }
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
        if missing:
            fresh = np.asarray(compute(missing), dtype=np.float32)
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    key = self._key(role, text)
                    found[key] = vector
                    self._conn.execute("INSERT OR REPLACE INTO vectors VALUES (?, ?)", (key, vector.tobytes()))
                self._conn.commit()
                self.misses += len(missing)
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[k] for k in keys])

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached("passage", texts, self.inner.passages)

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        return self._cached("query", texts, lambda missing: self.inner.queries(missing, timeout=timeout))

    def close(self) -> None:
        self._conn.close()
