"""The scanner (the dream's layer 0): what is not yet memory, in four tracks.

Pure: plain row records and the agent's watermark in, a frozen `ScanReport` out, and
`to_markdown` for the solidify prompt and for people.

- Track A: narratives with no source links (nothing ties them to the conversation they came from).
- Track B: context turns after the agent's watermark (the id of the last turn solidified), grouped
  per session into chunks of consecutive turns at most 10 minutes apart. Chunks too short to judge
  alone (fewer than 2 turns or 200 characters) are reported as short, never silently dropped.
- Tracks C and D: narratives and turns still waiting for their embedding.

The scan never moves the watermark; solidifying a chunk does, once its narratives are committed.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tideline_core.text.dates import as_utc, human

MAX_GAP = timedelta(minutes=10)
MIN_TURNS = 2
MIN_CHARS = 200
WAITING_STATES = frozenset({"pending"})
EXCERPT_CHARS = 200
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class NarrativeRow:
    id: int
    gesture: str
    created_at: datetime
    linked: bool  # has at least one source link (explicit or inferred)
    embedding_state: str = "done"


@dataclass(frozen=True, slots=True)
class TurnRow:
    id: int
    session_id: str
    role: str
    speaker: str
    content: str
    created_at: datetime
    embedding_state: str = "done"


@dataclass(frozen=True, slots=True)
class UnlinkedNarrative:
    id: int
    gesture: str
    created_at: datetime


@dataclass(frozen=True)
class Chunk:
    """Consecutive turns of one session, each within the gap of the one before (created_at, id order)."""

    session_id: str
    turns: tuple[TurnRow, ...]
    start: datetime = field(init=False)
    end: datetime = field(init=False)
    turn_ids: tuple[int, ...] = field(init=False)
    speakers: tuple[str, ...] = field(init=False)
    chars: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", as_utc(self.turns[0].created_at))
        object.__setattr__(self, "end", as_utc(self.turns[-1].created_at))
        object.__setattr__(self, "turn_ids", tuple(t.id for t in self.turns))
        object.__setattr__(self, "speakers", tuple(dict.fromkeys(_speaker(t) for t in self.turns)))
        object.__setattr__(self, "chars", sum(len(t.content) for t in self.turns))


@dataclass(frozen=True, slots=True)
class Backlog:
    """Rows still waiting for an embedding."""

    count: int
    oldest: datetime | None
    oldest_id: int | None


@dataclass(frozen=True)
class ScanReport:
    """Track A `unlinked`; track B `chunks` and `short_chunks` (too short to judge alone, still
    reported); tracks C/D the embedding backlogs; `watermark` is where the next scan starts."""

    unlinked: tuple[UnlinkedNarrative, ...]
    chunks: tuple[Chunk, ...]
    short_chunks: tuple[Chunk, ...]
    narratives_waiting: Backlog
    turns_waiting: Backlog
    watermark_before: int
    watermark: int

    @property
    def new_turns(self) -> int:
        return sum(len(c.turns) for c in self.chunks + self.short_chunks)


def scan(
    narratives: Iterable[NarrativeRow],
    turns: Iterable[TurnRow],
    watermark: int,
    *,
    max_gap: timedelta = MAX_GAP,
    min_turns: int = MIN_TURNS,
    min_chars: int = MIN_CHARS,
    waiting_states: Collection[str] = WAITING_STATES,
) -> ScanReport:
    """One scan of an agent's memory.

    Pass every narrative that is unlinked or waiting and every turn that is after the watermark
    or waiting (other rows are harmless, just unused). Track B takes the turns with id >
    `watermark`; the returned watermark is the highest turn id seen, never lower than the one
    given. A chunk is short when it has fewer than `min_turns` turns or `min_chars` characters.
    """
    narrative_rows = list(narratives)
    turn_rows = list(turns)
    waiting = frozenset(waiting_states)
    fresh = [t for t in turn_rows if t.id > watermark]
    chunks = chunk_turns(fresh, max_gap=max_gap)
    is_short = [len(c.turns) < min_turns or c.chars < min_chars for c in chunks]
    unlinked = sorted(
        (UnlinkedNarrative(n.id, n.gesture, as_utc(n.created_at)) for n in narrative_rows if not n.linked),
        key=lambda u: (u.created_at, u.id),
    )
    return ScanReport(
        unlinked=tuple(unlinked),
        chunks=tuple(c for c, short in zip(chunks, is_short, strict=True) if not short),
        short_chunks=tuple(c for c, short in zip(chunks, is_short, strict=True) if short),
        narratives_waiting=_backlog([(n.id, n.created_at) for n in narrative_rows if n.embedding_state in waiting]),
        turns_waiting=_backlog([(t.id, t.created_at) for t in turn_rows if t.embedding_state in waiting]),
        watermark_before=watermark,
        watermark=max([watermark, *(t.id for t in fresh)]),
    )


def chunk_turns(turns: Iterable[TurnRow], *, max_gap: timedelta = MAX_GAP) -> list[Chunk]:
    """Group turns per session, then split a session wherever two consecutive turns are more
    than `max_gap` apart (exactly `max_gap` stays together). Chunks ordered by start, session."""
    sessions: dict[str, list[TurnRow]] = {}
    for turn in turns:
        sessions.setdefault(turn.session_id, []).append(turn)
    chunks: list[Chunk] = []
    for session_id, rows in sessions.items():
        rows.sort(key=lambda t: (as_utc(t.created_at), t.id))
        current: list[TurnRow] = []
        for turn in rows:
            if current and as_utc(turn.created_at) - as_utc(current[-1].created_at) > max_gap:
                chunks.append(Chunk(session_id, tuple(current)))
                current = []
            current.append(turn)
        if current:
            chunks.append(Chunk(session_id, tuple(current)))
    chunks.sort(key=lambda c: (c.start, c.session_id, c.turn_ids[0]))
    return chunks


def to_markdown(report: ScanReport, *, excerpt: int = EXCERPT_CHARS, max_listed: int = 100) -> str:
    """The report for a person or the solidify prompt: one section per track, turn ids kept so
    new narratives can link back to them. Lists longer than `max_listed` are cut with a count."""
    lines = [
        "# Unindexed context scan",
        "",
        f"Watermark {report.watermark_before} → {report.watermark}: {report.new_turns} new turns in "
        f"{len(report.chunks)} chunks and {len(report.short_chunks)} short chunks.",
        "",
        f"## Track A: narratives without source links ({len(report.unlinked)})",
        "",
    ]
    for item in report.unlinked[:max_listed]:
        lines.append(f"- #{item.id} ({human(item.created_at)}) {_excerpt(item.gesture, excerpt)}")
    lines += _more(len(report.unlinked), max_listed)
    lines += ["", f"## Track B: new conversation chunks ({len(report.chunks)})", ""]
    lines += _chunks(report.chunks, excerpt, max_listed)
    lines += ["", f"## Short chunks, reported not dropped ({len(report.short_chunks)})", ""]
    lines += _chunks(report.short_chunks, excerpt, max_listed)
    lines += [
        "",
        f"## Track C: narratives waiting for embeddings ({report.narratives_waiting.count})",
        "",
        _backlog_line(report.narratives_waiting),
        "",
        f"## Track D: context turns waiting for embeddings ({report.turns_waiting.count})",
        "",
        _backlog_line(report.turns_waiting),
        "",
    ]
    return "\n".join(lines)


def _speaker(turn: TurnRow) -> str:
    return turn.speaker or turn.role


def _backlog(rows: Sequence[tuple[int, datetime]]) -> Backlog:
    if not rows:
        return Backlog(0, None, None)
    oldest_id, oldest = min(((i, as_utc(at)) for i, at in rows), key=lambda r: (r[1], r[0]))
    return Backlog(len(rows), oldest, oldest_id)


def _excerpt(text: str, limit: int) -> str:
    # One line per item: newlines in content would break the list (or forge a heading).
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "…"


def _chunks(chunks: Sequence[Chunk], excerpt: int, max_listed: int) -> list[str]:
    lines: list[str] = []
    for number, chunk in enumerate(chunks[:max_listed], start=1):
        lines += [
            f"### Chunk {number}: session {_excerpt(chunk.session_id, 80) or '(none)'}, "
            f"{human(chunk.start)} → {human(chunk.end)}, {len(chunk.turns)} turns, {chunk.chars} chars",
            "",
            f"Speakers: {', '.join(_excerpt(s, 80) for s in chunk.speakers)}",
            "",
        ]
        for turn in chunk.turns:
            lines.append(
                f"- [#{turn.id} {as_utc(turn.created_at):%H:%M} {_excerpt(_speaker(turn), 80)}] "
                f"{_excerpt(turn.content, excerpt)}"
            )
        lines.append("")
    lines += _more(len(chunks), max_listed)
    return lines


def _more(total: int, shown: int) -> list[str]:
    return [f"- … and {total - shown} more"] if total > shown else []


def _backlog_line(backlog: Backlog) -> str:
    if backlog.count == 0 or backlog.oldest is None:
        return "None waiting."
    return f"{backlog.count} waiting; the oldest is #{backlog.oldest_id} from {human(backlog.oldest)}."
