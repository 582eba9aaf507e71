"""The CLI's composition: the service over the configured store, publishing to the configured broker."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tideline_core.compose import compose
from tideline_core.embedding import NoEmbedder
from tideline_core.service import Service
from tideline_core.settings import Settings
from workers.jobqueue import CeleryJobQueue


@contextmanager
def open_service(settings: Settings, *, keyword_only: bool = False) -> Iterator[Service]:
    """The service for one command, closed afterwards; `keyword_only` never loads the embedding model."""
    jobs = CeleryJobQueue(settings)
    try:
        service = compose(settings, jobs=jobs, embedder=NoEmbedder() if keyword_only else None)
        try:
            yield service
        finally:
            service.close()
    finally:
        jobs.close()
