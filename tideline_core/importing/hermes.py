"""Hermes Agent sessions: the gateway's JSONL transcripts and the CLI's JSON session logs.

JSONL (`~/.hermes/sessions/<session>.jsonl`): one OpenAI-style message a line, `{role, content,
timestamp, ...}`, optionally first a `{role: "session_meta", model, platform, tools, timestamp}`
line; the session is the file's name. JSON (`session_<id>.json`): one object, `session_id`,
`session_start` and a `messages` list of the same messages (often without times: each then takes the
time of the one before it, the first the session's start). This one is read whole; Hermes writes it
whole on every turn, so it stays small.

Hermes writes its times as local wall-clock time with no zone (`datetime.now().isoformat()`): they
are read in the importing machine's zone, unless a caller gives another (`naive_zone`).

Kept: user and assistant text (content a string or a list of `text` parts), with `<think>` blocks
taken out of the assistant's. Passed over: session_meta, system and tool messages, and an
assistant message that only calls tools (the agent's working, as for Claude Code).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tideline_core.errors import InvalidInput
from tideline_core.importing.lines import (
    Clock,
    Line,
    Malformed,
    NaiveZone,
    SessionItem,
    SourceTurn,
    each_record,
    lines_of,
    text_of,
)

FORMAT = "hermes"
THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def read_hermes(path: str | Path, start_offset: int = 0, *, naive_zone: NaiveZone = "local") -> Iterator[SessionItem]:
    """A Hermes session file's turns, JSONL streamed or a JSON session log read whole (`start_offset` ignored).

    Hermes writes its local wall-clock time with no zone: such times are read in `naive_zone`, by
    default this machine's (import on the machine that ran Hermes, or set TZ).
    """
    path = Path(path)
    if not _is_document(path):
        return parse_hermes_lines(lines_of(path, start_offset), default_session=path.stem, naive_zone=naive_zone)
    size = path.stat().st_size
    try:
        document = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        return iter([Malformed(1, size, f"not a JSON session log ({exc})")])
    return parse_hermes_document(document, end_offset=size, default_session=path.stem, naive_zone=naive_zone)


def _is_document(path: Path) -> bool:
    """A JSON session log: named .json, or (another name) a first line that is not a message on its own."""
    if path.suffix in (".json", ".jsonl"):
        return path.suffix == ".json"
    with open(path, "rb") as stream:
        first = stream.readline()
    try:
        head = json.loads(first)
    except ValueError:
        return first.lstrip().startswith(b"{")  # pretty-printed
    return isinstance(head, dict) and "messages" in head


def parse_hermes_lines(
    lines: Iterable[Line], *, default_session: str = "", naive_zone: NaiveZone = "local"
) -> Iterator[SessionItem]:
    clock = Clock(naive_zone)
    return each_record(lines, lambda record, line: _message(record, clock, default_session, line.number, line.end))


def parse_hermes_document(
    document: Any, *, end_offset: int, default_session: str = "", naive_zone: NaiveZone = "local"
) -> Iterator[SessionItem]:
    """A JSON session log's turns; a bad message is reported as `messages[i]`, every item at `end_offset`."""
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        yield Malformed(1, end_offset, "a JSON session log must be an object with a messages list")
        return
    session = document.get("session_id")
    session = session if isinstance(session, str) and session else default_session
    clock = Clock(naive_zone)
    try:
        clock.read(document.get("session_start"), "session_start")
    except InvalidInput as exc:
        yield Malformed(1, end_offset, str(exc), where="session_start")
    for index, message in enumerate(document["messages"]):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            yield Malformed(index + 1, end_offset, "must be an object", where=where)
            continue
        try:
            item = _message(message, clock, session, index + 1, end_offset)
        except InvalidInput as exc:
            yield Malformed(index + 1, end_offset, str(exc), where=where)
            continue
        if isinstance(item, Malformed):
            yield Malformed(index + 1, end_offset, item.reason, where=where)
        elif item is not None:
            yield item


def _message(record: dict[str, Any], clock: Clock, session: str, number: int, offset: int) -> SessionItem | None:
    created_at = clock.read(record.get("timestamp"))
    role = record.get("role")
    if role not in ("user", "assistant"):
        if not isinstance(role, str):
            return Malformed(number, offset, "role: must be a string")
        return None  # session_meta, system, tool
    text = text_of(record.get("content"))
    if text is None:
        if record.get("content") is None and record.get("tool_calls"):
            return None
        return Malformed(number, offset, "content: must be a string or a list of parts")
    if role == "assistant":
        text = THINKING.sub("", text)
    if not text.strip():
        return None  # a tool call with no text, or an empty message
    return SourceTurn(role=role, content=text, session_id=session, created_at=created_at, line=number, offset=offset)
