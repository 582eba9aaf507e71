"""How far each live transcript was stored: a byte offset per transcript file, kept under the data dir.

One small JSON file per transcript (`<dir>/<hash of its path>.json`, replaced atomically) and a lock
file beside it: a reader holds the lock from reading the offset to saving the new one, so two hooks
of one transcript (a Stop and a SessionEnd, say) take turns instead of reading the same lines twice.
A crash between storing turns and saving the offset only means the next reader reads those lines
again; the turns' keys make that store nothing twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mark:
    """Where reading a transcript resumes: a byte offset at a line start, and the session its turns belong to."""

    offset: int = 0
    session_id: str = ""  # what the turns read so far were stored under (the file's own name for its session)
    inode: int = 0  # the file the offset is in: a transcript replaced by another file starts again at 0


class TranscriptOffsets:
    """The marks of every transcript a hook stored from, in `directory` (created on first use)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def under(cls, home: Path) -> TranscriptOffsets:
        """The marks kept in a data dir (`TIDELINE_HOME/hooks/offsets`), wherever the hook is answered."""
        return cls(home / "hooks" / "offsets")

    @contextmanager
    def held(self, transcript: str) -> Iterator[Held]:
        """The transcript's mark, under its lock until the block ends; `Held.save` records a new one."""
        self.directory.mkdir(parents=True, exist_ok=True)
        key = hashlib.sha256(os.fsencode(transcript)).hexdigest()[:32]
        with open(self.directory / f"{key}.lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield Held(self.directory / f"{key}.json", transcript)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


class Held:
    """One transcript's mark while its lock is held."""

    def __init__(self, path: Path, transcript: str) -> None:
        self.path = path
        self.transcript = transcript

    def read(self) -> Mark:
        """The saved mark; a fresh one when none was saved or the file cannot be read as one."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return Mark()
        if not isinstance(data, dict) or data.get("transcript") != self.transcript:
            return Mark()  # a hash collision or a hand-edited file: start over, the keys keep it harmless
        offset, session, inode = data.get("offset"), data.get("session_id"), data.get("inode")
        if not isinstance(offset, int) or offset < 0 or not isinstance(session, str) or not isinstance(inode, int):
            return Mark()
        return Mark(offset, session, inode)

    def save(self, mark: Mark) -> None:
        """Replace the saved mark atomically (a crash leaves the old one or the new one, never half of either)."""
        scratch = self.path.with_suffix(f".{os.getpid()}.tmp")
        payload = {
            "transcript": self.transcript,
            "offset": mark.offset,
            "session_id": mark.session_id,
            "inode": mark.inode,
        }
        with open(scratch, "w", encoding="utf-8") as out:
            json.dump(payload, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(scratch, self.path)
