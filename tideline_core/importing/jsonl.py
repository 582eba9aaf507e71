"""Generic JSON lines, one turn a line: `{role, content, timestamp, session}`, for any other source.

`role` is user, assistant, system or tool; `content` a string (or a list of `text` parts);
`timestamp` (or `created_at`) ISO-8601 or epoch seconds, optional; `session` (or `session_id`)
optional, the file's name when absent; `speaker` optional. Every turn is kept as given: a line with
another role or no text is malformed, not passed over, since nothing here is harness noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tideline_core.importing.lines import (
    Clock,
    Line,
    Malformed,
    SessionItem,
    SourceTurn,
    each_record,
    lines_of,
    text_of,
)

FORMAT = "jsonl"


def read_jsonl(path: str | Path, start_offset: int = 0) -> Iterator[SessionItem]:
    return parse_jsonl(lines_of(path, start_offset), default_session=Path(path).stem)


def parse_jsonl(lines: Iterable[Line], *, default_session: str = "") -> Iterator[SessionItem]:
    clock = Clock()
    return each_record(lines, lambda record, line: _turn(record, line, clock, default_session))


def _turn(record: dict[str, Any], line: Line, clock: Clock, default_session: str) -> SessionItem:
    time_field = "created_at" if "created_at" in record else "timestamp"
    created_at = clock.read(record.get(time_field), time_field)
    role = record.get("role")
    if not isinstance(role, str):
        return Malformed(line.number, line.end, "role: is required (user, assistant, system or tool)")
    text = text_of(record.get("content"))
    if text is None:
        return Malformed(line.number, line.end, "content: must be a string or a list of text parts")
    session = record.get("session", record.get("session_id"))
    if session is not None and not isinstance(session, str):
        return Malformed(line.number, line.end, "session: must be a string")
    speaker = record.get("speaker", "")
    if not isinstance(speaker, str):
        return Malformed(line.number, line.end, "speaker: must be a string")
    return SourceTurn(
        role=role,
        content=text,
        session_id=session or default_session,
        created_at=created_at,
        line=line.number,
        offset=line.end,
        speaker=speaker,
    )
