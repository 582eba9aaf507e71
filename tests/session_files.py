"""Generic JSONL session files for the import tests: a conversation of any length, written line by line."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path


def write_conversation(
    path: Path, turns: int, *, session_of: Callable[[int], str], step: timedelta, start: datetime | None = None
) -> Path:
    """`turns` turns, user and assistant by turns, `step` apart from `start` (1 June 2025), turn i in `session_of(i)`.

    Each turn's words differ (they carry i), so none is taken for another's repeat.
    """
    start = start or datetime(2025, 6, 1, tzinfo=UTC)
    with open(path, "w", encoding="utf-8") as out:
        for i in range(turns):
            line = {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"turn {i}: the ferry timetable changes on Mondays",
                "timestamp": (start + i * step).isoformat(),
                "session": session_of(i),
            }
            out.write(json.dumps(line) + "\n")
    return path
