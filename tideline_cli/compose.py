"""The CLI's composition: the service over the configured store, publishing to the configured broker."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tideline_core.compose import compose
from tideline_core.embedding import NoEmbedder
from tideline_core.service import Service
from tideline_core.settings import Settings
from workers.jobqueue import CeleryJobQueue

# A command has nothing else to do while the local model loads (its first start builds it): it waits
# for the model rather than answer by keyword, as a server answering an agent mid-turn must.
MODEL_WAIT = 120.0


@contextmanager
def open_service(settings: Settings, *, keyword_only: bool = False) -> Iterator[Service]:
    """The service for one command, closed afterwards; `keyword_only` never loads the embedding model."""
    if not keyword_only and settings.embedder == "local":
        wait = max(settings.query_embedding_timeout, MODEL_WAIT)
        settings = settings.model_copy(update={"query_embedding_timeout": wait})
    jobs = CeleryJobQueue(settings)
    try:
        service = compose(settings, jobs=jobs, embedder=NoEmbedder() if keyword_only else None)
        try:
            yield service
        finally:
            service.close()
    finally:
        jobs.close()
