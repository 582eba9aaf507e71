"""Agent runtime hooks (Claude Code, Codex): one event in, the service called, the runtime's answer out.

`parse_event` reads the runtime's JSON into a `HookEvent` (pure; InvalidInput naming the field);
`respond` answers it through a Service: SessionStart → the session-start block, UserPromptSubmit →
the per-turn block for the prompt, Stop / PreCompact / SessionEnd → the transcript's new turns
stored from the offset the last hook reached (`TranscriptOffsets`). The server's hook route and the
CLI's local fallback both call `respond`, so the answer is the same whichever process gives it.
"""

from tideline_hooks.events import (
    EVENTS,
    INJECT_EVENTS,
    RECORD_EVENTS,
    RUNTIMES,
    HookEvent,
    hook_output,
    parse_event,
    parse_runtime,
)
from tideline_hooks.offsets import Mark, TranscriptOffsets
from tideline_hooks.respond import HookAnswer, record_transcript, respond

__all__ = [
    "EVENTS",
    "INJECT_EVENTS",
    "RECORD_EVENTS",
    "RUNTIMES",
    "HookAnswer",
    "HookEvent",
    "Mark",
    "TranscriptOffsets",
    "hook_output",
    "parse_event",
    "parse_runtime",
    "record_transcript",
    "respond",
]
