"""The parts every operation of the service works over; built from settings by `tideline_core.compose`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection

from tideline_core.dream.contract import StageContext
from tideline_core.embedding import Embedder, NoEmbedder
from tideline_core.errors import InvalidInput
from tideline_core.inject.setup import InjectSetup
from tideline_core.search.hits import Searcher
from tideline_core.service.jobs import JobQueue
from tideline_core.store.database import Database
from tideline_core.store.receipts import KeyRace, Receipt, find_receipt, fingerprint, keep_receipt
from tideline_core.text.dates import utcnow


class ServiceParts:
    """The store, the searcher over it, the job queue for derived work, and what dream stages use."""

    def __init__(
        self,
        *,
        db: Database,
        searcher: Searcher,
        jobs: JobQueue,
        stages: StageContext,
        query_timeout: float,
        inject: InjectSetup | None = None,
    ) -> None:
        self.db = db
        self.inject = inject or InjectSetup()
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

    def soul(self, agent_id: str) -> tuple[Path | None, str | None]:
        """The agent's SOUL file and its text (None when there is none, or it cannot be read)."""
        path = self.inject.soul_file(agent_id)
        if path is None:
            return None, None
        try:
            return path, path.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, UnicodeDecodeError):
            return path, None

    def write_once(
        self,
        agent_id: str,
        key: str | None,
        operation: str,
        arguments: Sequence[BaseModel],
        write: Callable[[Connection], Any],
    ) -> Any:
        """Run `write` (which returns its result as JSON values) in one write transaction, once per key.

        With an idempotency `key` the result is kept beside the write, in the same transaction: the
        same key again returns that result and writes nothing, so an agent may retry a write whose
        answer it never got. A key reused for another kind of write or other arguments is refused.
        """
        if key is None:
            with self.db.write() as conn:
                return write(conn)
        digest = fingerprint([operation, *(a.model_dump_json(exclude_unset=True) for a in arguments)])
        try:
            with self.db.write() as conn:
                kept = find_receipt(conn, agent_id, key)
                if kept is None:
                    result = write(conn)
                    keep_receipt(
                        conn, agent_id, key, operation=operation, fingerprint=digest, result=result, now=utcnow()
                    )
                    return result
        except KeyRace:
            with self.db.read() as conn:
                kept = find_receipt(conn, agent_id, key)
            assert kept is not None, "the key's receipt committed before ours failed"
        return _replayed(kept, operation, digest)

    def close(self) -> None:
        self.db.close()


def _replayed(kept: Receipt, operation: str, digest: str) -> Any:
    if kept.operation != operation:
        raise InvalidInput(
            "idempotency_key", f"was first used to write a {kept.operation.replace('_', ' ')}; use a new key"
        )
    if kept.fingerprint != digest:
        raise InvalidInput(
            "idempotency_key",
            "was first used with other arguments; a retry must repeat them exactly, a new write needs a new key",
        )
    return kept.result
