"""Which reader a session file needs, told from its first lines; and the files a list of paths names."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tideline_core.errors import InvalidInput
from tideline_core.importing.claude_code import read_claude_code
from tideline_core.importing.codex import read_codex
from tideline_core.importing.hermes import read_hermes
from tideline_core.importing.jsonl import read_jsonl
from tideline_core.importing.lines import SessionItem, lines_of

Reader = Callable[[Path, int], Iterator[SessionItem]]
READERS: dict[str, Reader] = {
    "hermes": read_hermes,
    "claude-code": read_claude_code,
    "codex": read_codex,
    "jsonl": read_jsonl,
}
FORMATS = tuple(READERS)
SNIFF_LINES = 25
# A pretty-printed JSON session log is parsed whole to be told apart; past this it is not tried.
MAX_DOCUMENT_BYTES = 64 << 20
CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
CLAUDE_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation", "progress"}
CLAUDE_KEYS = ("sessionId", "uuid", "parentUuid", "leafUuid", "messageId")
HERMES_KEYS = ("tool_calls", "tool_call_id", "reasoning", "finish_reason")
SESSION_SUFFIXES = (".jsonl", ".json")


@dataclass(frozen=True)
class ImportPlan:
    """The files to read, each with its format, and those passed over in the directories given, with why."""

    files: tuple[tuple[Path, str], ...]
    passed_over: tuple[tuple[Path, str], ...]


def detect_format(path: str | Path) -> str | None:
    """The format of a session file, from its first non-blank lines; None when it is empty or fits none."""
    role_lines = False
    seen = 0
    for line in lines_of(path):
        if line.text is None or not line.text.strip():
            continue
        seen += 1
        if seen > SNIFF_LINES:
            break
        try:
            record = json.loads(line.text)
        except ValueError:
            return _document_format(Path(path)) if seen == 1 else None
        if not isinstance(record, dict):
            return None
        found = _line_format(record, first=seen == 1)
        if found is not None:
            return found
        role_lines = role_lines or ("role" in record and "content" in record)
    return "jsonl" if role_lines else None


def _line_format(record: dict[str, Any], *, first: bool) -> str | None:
    kind, role = record.get("type"), record.get("role")
    if kind in CODEX_TYPES and "payload" in record:
        return "codex"
    if "record_type" in record or (first and role is None and kind is None and "instructions" in record):
        return "codex"  # the older rollout layout
    if kind == "message" and isinstance(record.get("content"), list):
        parts = {p.get("type") for p in record["content"] if isinstance(p, dict)}
        if parts & {"input_text", "output_text"}:
            return "codex"
    if kind in CLAUDE_TYPES and any(key in record for key in CLAUDE_KEYS):
        return "claude-code"
    if role == "session_meta" or (role is not None and any(key in record for key in HERMES_KEYS)):
        return "hermes"
    if isinstance(record.get("messages"), list):
        return "hermes"  # a JSON session log on one line
    if role is not None and ("session" in record or "session_id" in record):
        return "jsonl"
    return None


def _document_format(path: Path) -> str | None:
    if path.stat().st_size > MAX_DOCUMENT_BYTES:
        return None
    try:
        document = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError):
        return None
    return "hermes" if isinstance(document, dict) and isinstance(document.get("messages"), list) else None


def plan_import(paths: Sequence[str | Path], fmt: str = "auto") -> ImportPlan:
    """Every file `paths` names (a directory: its .jsonl and .json files, recursively), with its format.

    `fmt` "auto" detects each file's. Raises InvalidInput, before anything is read for import, for a
    path that does not exist, a format that is not known, or a file named directly whose format
    cannot be told; in a directory such a file is passed over (a project folder holds other JSON).
    """
    if fmt != "auto" and fmt not in READERS:
        raise InvalidInput("format", f"must be auto or one of {', '.join(FORMATS)}, got {fmt!r}")
    if not paths:
        raise InvalidInput("PATH", "give at least one session file or directory")
    files: list[tuple[Path, str]] = []
    passed_over: list[tuple[Path, str]] = []
    for given in map(Path, paths):
        if given.is_dir():
            found = sorted(p for p in given.rglob("*") if p.suffix in SESSION_SUFFIXES and p.is_file())
            for path in found:
                chosen = _format_of(path, fmt)
                if chosen is None:
                    passed_over.append((path, "empty" if _empty(path) else "not a session file in a known format"))
                else:
                    files.append((path, chosen))
        elif given.is_file():
            chosen = _format_of(given, fmt)
            if chosen is None:
                if _empty(given):
                    passed_over.append((given, "empty"))
                    continue
                raise InvalidInput("format", f"cannot tell the format of {given}; give --format ({', '.join(FORMATS)})")
            files.append((given, chosen))
        else:
            raise InvalidInput("PATH", f"{given} does not exist (or is not a file or directory)")
    return ImportPlan(tuple(files), tuple(passed_over))


def _format_of(path: Path, fmt: str) -> str | None:
    try:
        if _empty(path):
            return None
        return detect_format(path) if fmt == "auto" else fmt
    except OSError as exc:
        raise InvalidInput("PATH", f"cannot read {path}: {exc.strerror or exc}") from None


def _empty(path: Path) -> bool:
    return path.stat().st_size == 0
