"""A hook event answered through the service: the blocks to inject, or the transcript's new turns stored."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tideline_core.domain.inputs import MAX_QUERY, InjectIn, PrefetchIn, parse
from tideline_core.errors import InvalidInput
from tideline_core.inject.render import Block
from tideline_core.service import Service, SessionsImported
from tideline_hooks.events import HookEvent, hook_output
from tideline_hooks.offsets import Mark, TranscriptOffsets

if TYPE_CHECKING:
    from tideline_core.importing.lines import Line, SessionItem

NOTHING_NEW = SessionsImported(
    files=0,
    sessions_added=0,
    sessions_skipped=0,
    turns_added=0,
    turns_skipped=0,
    malformed=0,
    passed_over=0,
    queued=False,
)


@dataclass(frozen=True)
class HookAnswer:
    """What an event came to: the context to add (maybe none), or what storing the transcript did."""

    event: str
    context: str = ""
    recorded: SessionsImported | None = None
    notes: tuple[str, ...] = field(default=())

    def output(self) -> dict[str, Any] | None:
        """The JSON the runtime reads on stdout, or None: print nothing."""
        return hook_output(self.event, self.context)


def respond(
    service: Service, event: HookEvent, *, agent_id: str, runtime: str, offsets: TranscriptOffsets
) -> HookAnswer:
    """Answer one event for `agent_id`: SessionStart and UserPromptSubmit inject, the others store turns."""
    if event.name == "SessionStart":
        block = service.session_start(agent_id, parse(InjectIn, {"session_id": event.session_id}))
        return HookAnswer(event.name, _shown(block), notes=block.notes)
    if event.name == "UserPromptSubmit":
        # A long paste is asked by its end, where the question usually is (as the Hermes provider does).
        query = event.prompt[-MAX_QUERY:]
        if not query.strip():
            return HookAnswer(event.name)  # an image alone, say: nothing to recall by
        block = service.prefetch(agent_id, parse(PrefetchIn, {"query": query, "session_id": event.session_id}))
        return HookAnswer(event.name, _shown(block), notes=block.notes)
    recorded = record_transcript(
        service, agent_id, runtime, event.transcript_path, session_id=event.session_id, offsets=offsets
    )
    return HookAnswer(event.name, recorded=recorded)


def record_transcript(
    service: Service, agent_id: str, runtime: str, transcript: str, *, session_id: str, offsets: TranscriptOffsets
) -> SessionsImported:
    """Store the turns `transcript` gained since the last call reached (its whole file the first time).

    The turns get the keys `tideline import` gives them, so reading a line twice, or importing the
    file later, stores nothing twice. The offset moves past every complete line read, turn or not;
    a last line still being written is left for the next call.
    """
    # The transcripts' readers load here, when a transcript is read: the blocks of a hook without a server never do.
    from tideline_core.importing import lines_of, parse_claude_code, parse_codex

    parsers = {"claude-code": parse_claude_code, "codex": parse_codex}
    parser = parsers.get(runtime)
    if parser is None:
        raise InvalidInput("runtime", f"must be one of {', '.join(parsers)}, got {runtime!r}")
    with offsets.held(transcript) as held:
        try:
            stat = os.stat(transcript)
        except OSError as exc:
            raise InvalidInput("transcript_path", f"cannot be read: {exc.strerror or exc}") from None
        mark = held.read()
        resume = mark.inode == stat.st_ino and mark.offset <= stat.st_size
        start = mark.offset if resume else 0
        if start == stat.st_size:
            return NOTHING_NEW
        # Read from the middle, a Codex file no longer shows the line naming its session: the one read
        # before goes on (else the runtime's own id, which a Codex session_meta line carries too).
        default = (mark.session_id if resume else "") or (session_id if runtime == "codex" else Path(transcript).stem)
        follow = _Follow(start, default)
        items = follow.items(parser(follow.lines(lines_of(transcript, start)), default_session=default))
        report = service.import_session_items(agent_id, items, runtime, source=transcript)
        held.save(Mark(follow.reached, follow.session, stat.st_ino))
        return report


class _Follow:
    """Where a read got to: the end of its last complete line, and the session of its last turn."""

    def __init__(self, start: int, session: str) -> None:
        self.reached = start
        self.session = session

    def lines(self, lines: Iterable[Line]) -> Iterator[Line]:
        for line in lines:
            yield line
            if line.complete:
                self.reached = line.end

    def items(self, items: Iterable[SessionItem]) -> Iterator[SessionItem]:
        from tideline_core.importing.lines import SourceTurn

        for item in items:
            if isinstance(item, SourceTurn):
                self.session = item.session_id
            yield item


def _shown(block: Block) -> str:
    # A block with nothing in it is only its heading: not worth the model's context on every turn.
    return block.text if block.items else ""
