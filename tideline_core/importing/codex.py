"""Codex CLI session logs (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): the user's and the assistant's messages.

Each line is `{timestamp, type, payload}`. `session_meta` (first) names the session (`payload.id`)
and when it began; `response_item` lines whose payload is `{type: "message", role, content}` are the
conversation, content a list of `input_text` / `output_text` parts. Everything else is passed over:
`event_msg` (the UI's copy of the same messages), `turn_context`, `compacted`, reasoning, function
calls and their output (the agent's working, as for Claude Code), developer and system messages.
User messages the harness writes (`<environment_context>`, `<user_instructions>`, the AGENTS.md
instructions, `<turn_aborted>`, skills, shell-command echoes ...) are not what the user said and are
passed over too.

The older layout (a first line `{id, timestamp, instructions}`, then bare `{type: "message", ...}`
items and `{record_type: "state"}` markers) is read the same way.
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
    lowered,
    starts_with_any,
    text_of,
)

FORMAT = "codex"
TEXT_PARTS = ("input_text", "output_text", "text")
HARNESS = lowered(
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions for",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
    "<context_update>",
    "<subagent_notification>",
    "<skill>",
    "<user_shell_command>",
    "<tool_context>",
    "<reasoning_context>",
    "<pinned_notes>",
)


def read_codex(path: str | Path, start_offset: int = 0) -> Iterator[SessionItem]:
    """The session's turns (and malformed lines), streamed; without a session_meta line the file's name is the session.

    Reading from a `start_offset` past the session_meta line names the session after the file.
    """
    return parse_codex(lines_of(path, start_offset), default_session=Path(path).stem)


def parse_codex(lines: Iterable[Line], *, default_session: str = "") -> Iterator[SessionItem]:
    clock = Clock()
    session = default_session
    named = False

    def read(record: dict[str, Any], line: Line) -> SessionItem | None:
        nonlocal session, named
        clock.read(record.get("timestamp"))
        kind = record.get("type")
        payload = record.get("payload")
        if kind == "session_meta" or (kind is None and "id" in record and "record_type" not in record):
            meta = payload if isinstance(payload, dict) else record
            if not named and isinstance(meta.get("id"), str) and meta["id"]:
                # A forked session repeats its parent's meta later on; the first one names this file's session.
                session, named = meta["id"], True
            clock.read(meta.get("timestamp"))
            return None
        if kind == "response_item":
            if not isinstance(payload, dict):
                return Malformed(line.number, line.end, "a response_item line without a payload object")
            return _message(payload, line, clock, session)
        if kind == "message":
            return _message(record, line, clock, session)  # the older layout: the item is the line itself
        return None

    return each_record(lines, read)


def _message(item: dict[str, Any], line: Line, clock: Clock, session: str) -> SessionItem | None:
    if item.get("type") != "message" or item.get("role") not in ("user", "assistant"):
        return None
    content = item.get("content")
    if isinstance(content, list):
        parts = [p for p in content if isinstance(p, dict) and p.get("type") in TEXT_PARTS]
        texts = [t for t in (text_of([p], TEXT_PARTS) or "" for p in parts) if t.strip()]
    elif isinstance(content, str):
        texts = [content] if content.strip() else []
    else:
        return Malformed(line.number, line.end, "payload.content: must be a list of parts")
    said = "\n\n".join(t for t in texts if not (item["role"] == "user" and starts_with_any(t, HARNESS)))
    if not said.strip():
        return None
    native = item.get("id")
    return SourceTurn(
        role=item["role"],
        content=said,
        session_id=session,
        created_at=clock.last,
        line=line.number,
        offset=line.end,
        native_id=native if isinstance(native, str) else "",
    )
