"""Hybrid search over narratives and context turns: keyword and dense candidates fused into one ranking."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from tideline_core.embedders import Embedder
from tideline_core.errors import ConfigurationError, EmbedderUnavailable
from tideline_core.inputs import SearchIn
from tideline_core.search import keyword
from tideline_core.search.fusion_basic import fuse
from tideline_core.search.vectors import VectorIndex
from tideline_core.store.context import load_turns
from tideline_core.store.database import Database
from tideline_core.store.narratives import load_narratives
from tideline_core.text import query_terms

KINDS = {"all": ("narrative", "context"), "narratives": ("narrative",), "context": ("context",)}


@dataclass(frozen=True)
class SearchHit:
    kind: str
    id: int
    score: float
    text: str
    occurred_at: datetime
    session_id: str = ""
    speaker: str = ""
    weight: float | None = None
    tags: tuple[str, ...] = ()
    signals: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchOutcome:
    hits: list[SearchHit]
    mode: str
    degraded: str | None = None
    terms: tuple[str, ...] = ()


class SearchService:
    """Reads the database directly (no worker involved); the query embedding is computed here."""

    def __init__(self, db: Database, embedder: Embedder, index: VectorIndex, *, query_timeout: float = 2.0) -> None:
        self.db = db
        self.embedder = embedder
        self.index = index
        self.query_timeout = query_timeout

    def _query_vector(self, query: str) -> tuple[np.ndarray | None, str | None]:
        try:
            return self.embedder.query(query, timeout=self.query_timeout), None
        except (EmbedderUnavailable, ConfigurationError) as exc:
            return None, f"semantic search unavailable ({exc}); results are keyword-only"

    def search(self, agent_id: str, params: SearchIn) -> SearchOutcome:
        terms = query_terms(params.query)
        depth = max(50, params.limit * 5)
        degraded = None
        vector = None
        if params.mode in ("hybrid", "dense"):
            vector, degraded = self._query_vector(params.query)
        mode = params.mode if vector is not None or params.mode == "keyword" else "keyword"
        signals: dict[str, dict[tuple[str, int], float]] = {}
        for kind in KINDS[params.kinds]:
            if mode in ("hybrid", "keyword"):
                with self.db.read() as conn:
                    hits = keyword.search(conn, kind, agent_id, terms, depth, params.since, params.until)
                signals.setdefault("keyword", {}).update({(kind, i): s for i, s in hits})
            if vector is not None and mode in ("hybrid", "dense"):
                dense = self.index.search(agent_id, kind, vector, depth, params.since, params.until)
                signals.setdefault("dense", {}).update({(kind, i): s for i, s in dense})
        ranked = fuse(signals)[: params.limit]
        return SearchOutcome(hits=self._hydrate(agent_id, ranked, signals), mode=mode, degraded=degraded, terms=tuple(terms))

    def _hydrate(
        self, agent_id: str, ranked: list[tuple[tuple[str, int], float]], signals: dict[str, dict[tuple[str, int], float]]
    ) -> list[SearchHit]:
        narrative_ids = [key[1] for key, _ in ranked if key[0] == "narrative"]
        turn_ids = [key[1] for key, _ in ranked if key[0] == "context"]
        with self.db.read() as conn:
            narratives = load_narratives(conn, agent_id, narrative_ids)
            turns = load_turns(conn, agent_id, turn_ids)
        hits: list[SearchHit] = []
        for key, score in ranked:
            contributions = {name: values[key] for name, values in signals.items() if key in values}
            if key[0] == "narrative" and key[1] in narratives:
                n = narratives[key[1]]
                hits.append(SearchHit("narrative", n.id, score, n.gesture, n.occurred_at, weight=n.weight,
                                      tags=n.tags, signals=contributions))
            elif key[0] == "context" and key[1] in turns:
                t = turns[key[1]]
                hits.append(SearchHit("context", t.id, score, t.content, t.created_at, session_id=t.session_id,
                                      speaker=t.speaker, signals=contributions))
        return hits
