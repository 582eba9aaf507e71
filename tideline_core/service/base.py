"""The parts every operation of the service works over; built from settings by `tideline_core.compose`."""

from __future__ import annotations

from tideline_core.dream.registry import StageContext
from tideline_core.embedding import Embedder, NoEmbedder
from tideline_core.search.hybrid import HybridSearch
from tideline_core.service.jobs import JobQueue
from tideline_core.store.database import Database


class ServiceParts:
    """The store, the searcher over it, the job queue for derived work, and what dream stages use."""

    def __init__(
        self, *, db: Database, searcher: HybridSearch, jobs: JobQueue, stages: StageContext, query_timeout: float
    ) -> None:
        self.db = db
        self.searcher = searcher
        self.jobs = jobs
        self.stages = stages
        self.query_timeout = query_timeout

    @property
    def embedder(self) -> Embedder:
        return self.searcher.embedder

    @property
    def embeds(self) -> bool:
        """False when the deployment runs keyword-only (no embedder configured)."""
        return not isinstance(self.embedder, NoEmbedder)

    def close(self) -> None:
        self.db.close()
