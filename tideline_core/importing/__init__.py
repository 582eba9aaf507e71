"""Reading past sessions from agent runtimes' files: lines in, turns (or malformed lines, as values) out.

One module per format, each a `read_<format>(path, start_offset=0)` that streams the file and a
`parse_<format>(lines)` over already-split lines (pure): `hermes` (Hermes Agent JSONL transcripts and
JSON session logs), `claude_code` (Claude Code transcripts), `codex` (Codex CLI rollout files),
`jsonl` (generic `{role, content, timestamp, session}` lines). `detect` tells a file's format from its
first lines and lists the files a set of paths names; `keys` gives each turn the key that makes a
second import of it a no-op. Storing is the service's: `Service.import_sessions` for files,
`Service.import_session_items` for items a caller already read.

Every item carries the byte offset after its line, so a caller (a runtime hook reading a transcript
as it grows) can keep the last one and resume from it:

    for item in read_claude_code(transcript, start_offset=kept):
        ...; kept = item.offset
"""

from tideline_core.importing.claude_code import parse_claude_code, read_claude_code
from tideline_core.importing.codex import parse_codex, read_codex
from tideline_core.importing.detect import FORMATS, READERS, ImportPlan, detect_format, plan_import
from tideline_core.importing.hermes import parse_hermes_document, parse_hermes_lines, read_hermes
from tideline_core.importing.jsonl import parse_jsonl, read_jsonl
from tideline_core.importing.keys import TurnKeys, turn_key
from tideline_core.importing.lines import Line, Malformed, SessionItem, SourceTurn, lines_of

__all__ = [
    "FORMATS",
    "READERS",
    "ImportPlan",
    "Line",
    "Malformed",
    "SessionItem",
    "SourceTurn",
    "TurnKeys",
    "detect_format",
    "lines_of",
    "parse_claude_code",
    "parse_codex",
    "parse_hermes_document",
    "parse_hermes_lines",
    "parse_jsonl",
    "plan_import",
    "read_claude_code",
    "read_codex",
    "read_hermes",
    "read_jsonl",
    "turn_key",
]
