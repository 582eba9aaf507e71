"""`tideline hook` without a server: the event answered over the store opened in this process.

Keyword-only: a process started for one prompt cannot afford loading the embedding model (about
0.6 s) on every turn; the ingest worker embeds what is stored, and a running server answers by
meaning. With Redis down the turns are stored all the same (their embedding waits for the reconciler).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from tideline_cli.compose import open_service
from tideline_core.hooks import TranscriptOffsets, parse_event, parse_runtime, respond
from tideline_core.settings import Settings


def answer_locally(runtime: str, agent: str, data: Any) -> dict[str, Any] | None:
    """The output for the runtime to read (None: print nothing); TidelineError for an event that breaks a rule."""
    event = parse_event(data)
    settings = Settings()
    settings.ensure_home()
    with open_service(settings, keyword_only=True) as service:
        answer = respond(
            service,
            event,
            agent_id=agent,
            runtime=parse_runtime(runtime),
            offsets=TranscriptOffsets.under(settings.home),
        )
    return answer.output()


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
