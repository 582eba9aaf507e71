"""A runtime hook's event (Claude Code, Codex) read into a value, and the answer a runtime reads back (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tideline_core.errors import InvalidInput

# Runtime → the format its transcripts are read in (tideline_core.importing) and the agent it stands for by default.
RUNTIMES = ("claude-code", "codex")
INJECT_EVENTS = ("SessionStart", "UserPromptSubmit")
# Each stores what the transcript gained since the last one read it: after every turn, before a
# compaction drops messages from the runtime's context, and at the session's end.
RECORD_EVENTS = ("Stop", "PreCompact", "SessionEnd")
EVENTS = INJECT_EVENTS + RECORD_EVENTS
MAX_SESSION_ID = 256
MAX_PATH = 4096


@dataclass(frozen=True)
class HookEvent:
    """One event: its name, the runtime's session, the transcript it keeps, and what the user just said."""

    name: str
    session_id: str
    transcript_path: str = ""  # absolute; "" when the runtime keeps none
    prompt: str = ""  # UserPromptSubmit only


def parse_event(data: Any) -> HookEvent:
    """The runtime's JSON (already decoded) as a HookEvent; InvalidInput naming the field and the rule otherwise.

    Fields a runtime adds that Tideline does not use (`cwd`, `model`, `turn_id`, `source`, `trigger`,
    `reason`, ...) are ignored, so a newer runtime's events still parse.
    """
    if not isinstance(data, Mapping):
        raise InvalidInput("event", f"must be a JSON object, got a JSON {_json_type(data)}")
    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise InvalidInput("hook_event_name", "is required: the event's name, e.g. UserPromptSubmit")
    if name not in EVENTS:
        raise InvalidInput("hook_event_name", f"must be one of {', '.join(EVENTS)}, got {name[:64]!r}")
    session_id = _text(data, "session_id", MAX_SESSION_ID)
    transcript = data.get("transcript_path")
    if transcript is None or transcript == "":
        if name in RECORD_EVENTS:
            raise InvalidInput("transcript_path", f"is required for {name}: the transcript to store turns from")
        transcript = ""
    else:
        transcript = _text(data, "transcript_path", MAX_PATH)
        if not transcript.startswith("/"):
            raise InvalidInput("transcript_path", f"must be an absolute path, got {transcript[:64]!r}")
    prompt = ""
    if name == "UserPromptSubmit":
        value = data.get("prompt")
        if not isinstance(value, str):
            raise InvalidInput("prompt", f"is required for UserPromptSubmit and must be text, got {_json_type(value)}")
        prompt = value
    return HookEvent(name=name, session_id=session_id, transcript_path=transcript, prompt=prompt)


def parse_runtime(value: Any) -> str:
    if value not in RUNTIMES:
        raise InvalidInput("runtime", f"must be one of {', '.join(RUNTIMES)}, got {value!r}")
    return str(value)


def hook_output(event_name: str, context: str) -> dict[str, Any] | None:
    """What the runtime reads on stdout to add `context` to the model's: None (print nothing) when there is none."""
    if not context or event_name not in INJECT_EVENTS:
        return None
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": context}}


def _text(data: Mapping[str, Any], field: str, limit: int) -> str:
    value = data.get(field)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(field, f"is required and must be non-empty text, got {_json_type(value)}")
    if len(value) > limit:
        raise InvalidInput(field, f"must be at most {limit} characters, got {len(value)}")
    if "\x00" in value:
        raise InvalidInput(field, "must not contain NUL characters")
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string" if value else "empty string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, Mapping) else type(value).__name__
