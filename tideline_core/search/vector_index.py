"""The in-memory vector index: one matrix per (agent, kind, view), refreshed incrementally from the store."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from tideline_core.numeric import np
from tideline_core.store.catchup import IdCursor, StoreVersion, catch_up
from tideline_core.store.database import Database
from tideline_core.store.embeddings import vectors_after
from tideline_core.store.lookup import no_pause
from tideline_core.store.schema import Embedding


@dataclass
class _Shard:
    model: str
    cursor: IdCursor = field(default_factory=IdCursor)  # which embedding ids are absorbed
    size: int = 0
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    row_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    times: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    position: dict[int, int] = field(default_factory=dict)
    version: StoreVersion | None = None  # the store's high-water marks when last refreshed
    lock: threading.Lock = field(default_factory=threading.Lock)

    def absorb(self, row_ids: list[int], matrix: np.ndarray, times: list[datetime]) -> None:
        stamps = np.array([t.timestamp() for t in times], dtype=np.float64)
        fresh_rows, fresh_pos = [], []
        for i, row_id in enumerate(row_ids):
            at = self.position.get(row_id)
            if at is None:
                fresh_rows.append(row_id)
                fresh_pos.append(i)
            else:  # re-embedded: overwrite in place
                self.matrix[at] = matrix[i]
                self.times[at] = stamps[i]
        if not fresh_rows:
            return
        need = self.size + len(fresh_rows)
        if self.matrix.shape[0] < need or self.matrix.shape[1] != matrix.shape[1]:
            capacity = max(need, 2 * self.matrix.shape[0], 256)
            grown = np.zeros((capacity, matrix.shape[1]), dtype=np.float32)
            grown_ids = np.zeros(capacity, dtype=np.int64)
            grown_times = np.zeros(capacity, dtype=np.float64)
            if self.size:
                grown[: self.size] = self.matrix[: self.size]
                grown_ids[: self.size] = self.row_ids[: self.size]
                grown_times[: self.size] = self.times[: self.size]
            self.matrix, self.row_ids, self.times = grown, grown_ids, grown_times
        sel = np.array(fresh_pos)
        self.matrix[self.size : need] = matrix[sel]
        self.row_ids[self.size : need] = np.array(fresh_rows, dtype=np.int64)
        self.times[self.size : need] = stamps[sel]
        for offset, row_id in enumerate(fresh_rows):
            self.position[row_id] = self.size + offset
        self.size = need


class VectorIndex:
    """Cosine top-k over an agent's vectors without parsing every blob per query.

    Each search first pulls only embeddings newer than the last one seen (an indexed range scan),
    and any older ones that were still in flight then (``IdCursor``), so a vector written by a
    worker in another process is searchable on the next query.
    """

    def __init__(self, db: Database, model: str, *, extracts: bool = True) -> None:
        self.db = db
        self.model = model
        self.extracts = extracts  # False: the dream's extracts (digests, extractive memories) are not indexed
        self._shards: dict[tuple[str, str, str], _Shard] = {}
        self._guard = threading.Lock()
        # Called between batches of vectors read, holding the shard's lock (as `KeywordIndex.pause`).
        self.pause: Callable[[], None] = no_pause

    def _shard(self, agent_id: str, kind: str, view: str) -> _Shard:
        with self._guard:
            shard = self._shards.get((agent_id, kind, view))
            if shard is None:
                shard = self._shards[(agent_id, kind, view)] = _Shard(model=self.model)
            return shard

    def rows(self, agent_id: str, kind: str, view: str = "base") -> int:
        """Rows the index holds for the agent's `kind` in `view` as of its last refresh (0 before the first)."""
        with self._guard:
            shard = self._shards.get((agent_id, kind, view))
        return shard.size if shard is not None else 0

    def refresh(self, agent_id: str, kind: str, view: str = "base", version: StoreVersion | None = None) -> _Shard:
        """Absorb vectors written since the last refresh; skipped when `version` (read by the caller
        before this call) equals the one seen at the last refresh and no older id is still awaited:
        then nothing can have been written."""
        shard = self._shard(agent_id, kind, view)
        with shard.lock:
            if version is not None and version == shard.version and not shard.cursor.holes:
                return shard
            with self.db.snapshot() as conn:
                batch = vectors_after(
                    conn, agent_id, kind, self.model, view, shard.cursor, extracts=self.extracts, pause=self.pause
                )
                newest, visible = catch_up(conn, Embedding.__table__, shard.cursor, [batch.newest])
            if batch.matrix is not None:
                shard.absorb(batch.row_ids, batch.matrix, batch.times)
            shard.cursor.settle(newest, visible, time.monotonic())
            shard.version = version  # only once absorbed: a failed load must not be skipped next time
        return shard

    def search(
        self,
        agent_id: str,
        kind: str,
        query: np.ndarray,
        k: int,
        since: datetime | None = None,
        until: datetime | None = None,
        view: str = "base",
        version: StoreVersion | None = None,
    ) -> list[tuple[int, float]]:
        """Top-k (row id, cosine) of the agent's rows of `kind` in `view`, optionally within a time range."""
        shard = self.refresh(agent_id, kind, view, version)
        with shard.lock:
            if shard.size == 0:
                return []
            scores = shard.matrix[: shard.size] @ np.asarray(query, dtype=np.float32)
            if since is not None or until is not None:
                times = shard.times[: shard.size]
                keep = np.ones(shard.size, dtype=bool)
                if since is not None:
                    keep &= times >= since.timestamp()
                if until is not None:
                    keep &= times <= until.timestamp()
                scores = np.where(keep, scores, -np.inf)
            k = min(k, shard.size)
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.argsort(-scores[top], kind="stable")]
            return [(int(shard.row_ids[i]), float(scores[i])) for i in top if np.isfinite(scores[i])]
