"""`tideline hook` without a server: the event answered over the store opened in this process.

A process started for one prompt cannot afford what a server pays once: loading the embedding
model (about 0.6 s) or building the in-memory keyword index (1.5 s at 10,000 memories, 15 s at
100,000). So it searches by keyword over the store's own index (FTS5, or PostgreSQL's tsvectors;
`compose(..., cold=True)`), and the ingest worker embeds what is stored; a running server answers
by meaning. With Redis down the turns are stored all the same (their embedding waits for the
reconciler).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import OperationalError

from tideline_core.compose import compose
from tideline_core.service import JobQueue, Service, TaskResult
from tideline_core.service.notices import other_agents_notice
from tideline_core.settings import Settings
from tideline_core.text.dates import utcnow
from tideline_hooks import TranscriptOffsets, parse_event, parse_runtime, respond

if TYPE_CHECKING:
    from workers.jobqueue import CeleryJobQueue

log = logging.getLogger(__name__)


def answer_locally(runtime: str, agent: str, data: Any) -> dict[str, Any] | None:
    """The output for the runtime to read (None: print nothing); TidelineError for an event that breaks a rule."""
    event = parse_event(data)
    settings = Settings()
    settings.ensure_home()
    with open_cold_service(settings) as service:
        answer = respond(
            service,
            event,
            agent_id=agent,
            runtime=parse_runtime(runtime),
            offsets=TranscriptOffsets.under(settings.home),
        )
        if event.name == "SessionStart":  # once a session: an empty block for the wrong agent says so in the log
            notice = other_agents_notice(agent, service.agents_with_memories())
            if notice:
                log.error("SessionStart (%s): %s", runtime, notice)
    return answer.output()


@contextmanager
def open_cold_service(settings: Settings) -> Iterator[Service]:
    """The service for one hook event, closed afterwards: keyword search over FTS5, no model, Celery only if needed."""
    jobs = HookJobs(settings)
    try:
        service = compose(settings, jobs=jobs, cold=True)
        jobs.attend_with(service)
        try:
            yield service
        finally:
            service.close()
    finally:
        jobs.close()


class HookJobs:
    """The hook's job queue: attention logged here and now, other work published to Celery, imported when first asked.

    A per-turn block logs what it showed (attention); publishing that would cost the prompt Celery's
    import (about 0.1 s) and a publish, where the hook already holds the store and writes to it (what
    the session was shown): the worker's task would make this same write. Embedding the turns a Stop
    stored, and anything else, goes to the workers as from every other process.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._service: Service | None = None
        self._celery: CeleryJobQueue | None = None

    def attend_with(self, service: Service) -> None:
        self._service = service

    def log_attention(self, agent_id: str, hits: Sequence[tuple[int, float | None]], source: str) -> bool:
        if not hits:
            return True
        if self._service is None:
            return self._queue().log_attention(agent_id, hits, source)
        try:
            self._service.log_attention(agent_id, hits, source, utcnow())
        except OperationalError as exc:  # a store busy past its timeout: a lost log, never a lost block
            log.error("attention not logged (%s): %s", source, exc)
            return False
        return True

    def embed(self, agent_id: str, *, again: bool = False) -> bool:
        return self._queue().embed(agent_id, again=again)

    def start_stage(self, agent_id: str, stage: str, *, dry_run: bool = False) -> str | None:
        return self._queue().start_stage(agent_id, stage, dry_run=dry_run)

    def start_dream(self, agent_id: str) -> str | None:
        return self._queue().start_dream(agent_id)

    def task_result(self, task_id: str, wait: float) -> TaskResult | None:
        return self._queue().task_result(task_id, wait)

    def queue_depths(self) -> dict[str, int] | None:
        return self._queue().queue_depths()

    def workers(self) -> dict[str, list[str]] | None:
        return self._queue().workers()

    def close(self) -> None:
        if self._celery is not None:
            self._celery.close()

    def _queue(self) -> JobQueue:
        if self._celery is None:
            from workers.jobqueue import CeleryJobQueue

            self._celery = CeleryJobQueue(self.settings)
        return self._celery


def log_libraries_to(path: Path) -> None:
    """Errors the libraries log (the store, the broker client) go to the hook's log, never to the runtime's stderr."""
    logging.raiseExceptions = False  # a log that cannot be written is no reason to print to the runtime
    handler: logging.Handler
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.ERROR)
