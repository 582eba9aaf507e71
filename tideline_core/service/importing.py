"""Importing past sessions: every turn stored once as a context turn, in batches, resumable after a crash.

The files are streamed (a 1 GB transcript is never held whole), turns validated as any recorded turn
and written `batch_size` at a time, each batch one transaction that first looks up which of its
turns' keys (`importing.keys`) are already stored. So a second import adds nothing, and an import
killed midway, run again, adds exactly what the first did not commit. Embedding is queued after each
batch, as for `record_turns`: imported turns become searchable by meaning once an ingest worker ran.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tideline_core.domain.inputs import ContextTurnIn, parse
from tideline_core.errors import InvalidInput
from tideline_core.service.base import ServiceParts
from tideline_core.store import turns

if TYPE_CHECKING:
    from tideline_core.importing import SessionItem, SourceTurn, TurnKeys

BATCH_SIZE = 500


class ImportObserver(Protocol):
    """What an import tells its caller as it goes (a progress bar, a list of bad lines)."""

    def progress(self, done: int, total: int) -> None:
        """`done` of `total` bytes of every file read so far."""
        ...

    def malformed(self, where: str, reason: str) -> None:
        """A line skipped: `where` is `file:line` (or `file:messages[i]`)."""
        ...

    def passed_over(self, path: str, reason: str) -> None:
        """A file in a directory given that is not read (empty, or no known format)."""
        ...


@dataclass(frozen=True)
class SessionsImported:
    files: int
    sessions_added: int  # sessions that gained at least one turn
    sessions_skipped: int  # sessions whose every turn was already stored
    turns_added: int
    turns_skipped: int  # already stored (an earlier import, or the same turn in another file)
    malformed: int
    passed_over: int  # files in the directories given that were not read
    queued: bool  # embedding asked for (False when nothing was added, or the queue is unreachable)


class ImportOps(ServiceParts):
    def import_sessions(
        self,
        agent_id: str,
        paths: Sequence[str | Path],
        fmt: str = "auto",
        *,
        observer: ImportObserver | None = None,
        batch_size: int = BATCH_SIZE,
    ) -> SessionsImported:
        """Store the turns of every session file `paths` names (files, or directories of them) as context turns.

        `fmt` is auto (each file's told from its first lines) or one of `importing.FORMATS`. Paths
        and formats are all checked before anything is stored (InvalidInput otherwise). A line that
        cannot be read, or whose turn breaks a rule of `context_record`, is told to `observer` and
        skipped; the rest goes on.
        """
        from tideline_core.importing import READERS, plan_import

        importer = _Importer(self, agent_id, observer, batch_size)
        plan = plan_import(paths, fmt)
        for path, reason in plan.passed_over:
            if observer is not None:
                observer.passed_over(str(path), reason)
        sizes = [path.stat().st_size for path, _fmt in plan.files]
        total, done = sum(sizes), 0
        for (path, chosen), size in zip(plan.files, sizes, strict=True):
            try:
                importer.feed(READERS[chosen](path, 0), chosen, str(path), done, size, total)
            except OSError as exc:  # gone or unreadable since it was planned: the other files go on
                importer.malformed(str(path), f"cannot read the file: {exc.strerror or exc}")
            done += size
            if observer is not None:
                observer.progress(done, total)
        return importer.finish(files=len(plan.files), passed_over=len(plan.passed_over))

    def import_session_items(
        self,
        agent_id: str,
        items: Iterable[SessionItem],
        fmt: str,
        *,
        source: str = "",
        observer: ImportObserver | None = None,
        batch_size: int = BATCH_SIZE,
    ) -> SessionsImported:
        """Store turns a reader already yielded (what a live transcript gained since an offset, say), as an import does.

        The keys are the ones a full import of the file gives (the repeat counter aside), so a hook
        that stores a transcript as it grows and a later `tideline import` of it store each turn
        once. Malformed items are told to `observer` as `source:line`.
        """
        from tideline_core.importing import FORMATS

        if fmt not in FORMATS:
            raise InvalidInput("format", f"must be one of {', '.join(FORMATS)}, got {fmt!r}")
        importer = _Importer(self, agent_id, observer, batch_size)
        importer.feed(items, fmt, source, 0, 0, 0)
        return importer.finish(files=0, passed_over=0)


@dataclass(frozen=True)
class _Pending:
    item: ContextTurnIn
    session_id: str
    created_at: datetime | None  # the source's own time (None: stored at the import's time)
    key: str


@dataclass
class _Importer:
    """One import's batch and tally; `feed` takes a file's items, `finish` stores the rest and reports."""

    ops: ImportOps
    agent_id: str
    observer: ImportObserver | None
    batch_size: int
    batch: list[_Pending] = field(default_factory=list)
    added: int = 0
    skipped: int = 0
    bad: int = 0
    queued: bool = False
    sessions: dict[str, bool] = field(default_factory=dict)  # session → gained a turn

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise InvalidInput("batch_size", f"must be at least 1, got {self.batch_size}")

    def feed(self, items: Iterable[SessionItem], fmt: str, source: str, done: int, size: int, total: int) -> None:
        """Validate and batch a file's items; progress is `done` + the offset reached (capped at `size`)."""
        from tideline_core.importing import Malformed, TurnKeys

        keys = TurnKeys()  # per file: reading it again from its start gives every turn the same key
        for item in items:
            if isinstance(item, Malformed):
                self.malformed(item.location(source), item.reason)
            else:
                pending = self._pending(item, fmt, keys)
                if isinstance(pending, str):
                    self.malformed(f"{source}:{item.line}", pending)
                else:
                    self.batch.append(pending)
                    if len(self.batch) >= self.batch_size:
                        self._store()
            if self.observer is not None and total:
                self.observer.progress(done + min(item.offset, size), total)

    def malformed(self, where: str, reason: str) -> None:
        self.bad += 1
        if self.observer is not None:
            self.observer.malformed(where, reason)

    def finish(self, *, files: int, passed_over: int) -> SessionsImported:
        if self.batch:
            self._store()
        gained = sum(self.sessions.values())
        return SessionsImported(
            files=files,
            sessions_added=gained,
            sessions_skipped=len(self.sessions) - gained,
            turns_added=self.added,
            turns_skipped=self.skipped,
            malformed=self.bad,
            passed_over=passed_over,
            queued=self.queued,
        )

    @staticmethod
    def _pending(turn: SourceTurn, fmt: str, keys: TurnKeys) -> _Pending | str:
        """The turn validated as `context_record` would, with its key; the rule it breaks otherwise."""
        try:
            item = parse(
                ContextTurnIn,
                {
                    "role": turn.role,
                    "content": turn.content,
                    "session_id": turn.session_id,
                    "speaker": turn.speaker,
                    "created_at": turn.created_at,
                },
            )
        except InvalidInput as exc:
            return str(exc)
        key = keys.key(item.session_id, item.role, item.content, item.created_at)
        metadata = {turns.IMPORT_HASH: key, "imported_from": fmt}
        if turn.native_id:
            metadata["source_id"] = turn.native_id[:128]
        return _Pending(item.model_copy(update={"metadata": metadata}), item.session_id, item.created_at, key)

    def _store(self) -> None:
        """One transaction: the batch's turns not stored yet (by key) are inserted; then embedding is queued."""
        batch, self.batch = self.batch, []
        with self.ops.db.write() as conn:
            stored = turns.imported_keys(conn, self.agent_id, [(p.session_id, p.created_at, p.key) for p in batch])
            new: list[_Pending] = []
            for pending in batch:
                if pending.key not in stored:
                    stored.add(pending.key)  # the same turn twice in one batch (two copies of a file) goes in once
                    new.append(pending)
            if new:
                turns.insert_turns(conn, self.agent_id, [p.item for p in new])
        # Counted only once committed: a batch that failed adds nothing to what is reported.
        self.skipped += len(batch) - len(new)
        self.added += len(new)
        for pending in batch:
            self.sessions.setdefault(pending.session_id, False)
        for pending in new:
            self.sessions[pending.session_id] = True
        if new:
            self.queued = self.ops.jobs.embed(self.agent_id) or self.queued
