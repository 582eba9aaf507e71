"""Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`): the said text of user and assistant lines.

Each line is an object with a `type`. Lines of type "user" and "assistant" carry `message: {role,
content}` (content a string or a list of parts: text, tool_use, tool_result, thinking, image ...),
`timestamp`, `sessionId` and `uuid`; every other type (summary, system, file-history-snapshot,
queue-operation, progress ...) is bookkeeping and is passed over.

Kept: the text parts. Passed over, as not conversation: tool_use and tool_result parts (the agent's
working: file contents, command output, which would drown what was said in search; the text the
agent wrote around them is kept), thinking, images; lines marked `isMeta` (injected caveats),
`isSidechain` (a subagent's own conversation), `isCompactSummary` (a generated summary of earlier
turns, which are in the file themselves) and `isApiErrorMessage`; slash-command echoes and local
command output (`<command-name>`, `<local-command-stdout>` ...), system reminders and
"[Request interrupted by user]".
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
    part_text,
    starts_with_any,
)

FORMAT = "claude-code"
SAID = ("user", "assistant")
SKIPPED_FLAGS = ("isMeta", "isSidechain", "isCompactSummary", "isApiErrorMessage")
NOISE = lowered(
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
    "[Request interrupted by user",
)


def read_claude_code(path: str | Path, start_offset: int = 0) -> Iterator[SessionItem]:
    """The transcript's turns (and malformed lines) from `start_offset` on, streamed.

    Each item's `offset` is the byte offset after its line: keep the last one and pass it as
    `start_offset` next time to read only what was appended since (line numbers then count from there).
    """
    return parse_claude_code(lines_of(path, start_offset), default_session=Path(path).stem)


def parse_claude_code(lines: Iterable[Line], *, default_session: str = "") -> Iterator[SessionItem]:
    clock = Clock()
    return each_record(lines, lambda record, line: _turn(record, line, clock, default_session))


def _turn(record: dict[str, Any], line: Line, clock: Clock, default_session: str) -> SessionItem | None:
    if record.get("type") not in SAID:
        return None
    created_at = clock.read(record.get("timestamp"))
    if any(record.get(flag) is True for flag in SKIPPED_FLAGS):
        return None
    message = record.get("message")
    if not isinstance(message, dict):
        return Malformed(line.number, line.end, f"a {record['type']} line without a message object")
    role = message.get("role") or record["type"]
    if role not in SAID:
        return Malformed(line.number, line.end, f"message.role: must be user or assistant, got {role!r}")
    content = message.get("content")
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list):
        texts = [part_text(p) for p in content if isinstance(p, dict) and p.get("type") == "text"]
    else:
        return Malformed(line.number, line.end, "message.content: must be a string or a list of parts")
    said = "\n\n".join(t for t in texts if t.strip() and not starts_with_any(t, NOISE))
    if not said.strip():
        return None  # only tool calls, tool results, thinking or harness text
    session = record.get("sessionId")
    uuid = record.get("uuid")
    return SourceTurn(
        role=role,
        content=said,
        session_id=session if isinstance(session, str) and session else default_session,
        created_at=created_at,
        line=line.number,
        offset=line.end,
        native_id=uuid if isinstance(uuid, str) else "",
    )
