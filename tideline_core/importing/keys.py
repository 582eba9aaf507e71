"""Each imported turn's key: a hash of what it is (session, role, text, time), so importing it again finds it."""

from __future__ import annotations

import hashlib
from datetime import datetime


def turn_key(session_id: str, role: str, content: str, created_at: datetime | None, occurrence: int = 0) -> str:
    """128 bits of SHA-256 over the turn's parts; `occurrence` tells apart the same words said again at one time."""
    when = created_at.isoformat() if created_at is not None else ""
    digest = hashlib.sha256("\x1f".join((session_id, role, content, when, str(occurrence))).encode())
    return digest.hexdigest()[:32]


class TurnKeys:
    """Keys for a file's turns in order: the n-th identical turn (same session, role, text and time) gets n.

    Counts are kept only while the time stays the same (a repeat at another time has another key
    anyway), so memory stays small on a large file whose lines carry times. Read the same file
    again, from its start, and every turn gets the same key.
    """

    def __init__(self) -> None:
        self._time: datetime | None = None
        self._counts: dict[str, int] = {}

    def key(self, session_id: str, role: str, content: str, created_at: datetime | None) -> str:
        if created_at != self._time:
            self._time, self._counts = created_at, {}
        base = turn_key(session_id, role, content, created_at)
        seen = self._counts.get(base, 0)
        self._counts[base] = seen + 1
        return base if seen == 0 else turn_key(session_id, role, content, created_at, seen)
