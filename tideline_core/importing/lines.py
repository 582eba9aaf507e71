"""What every session reader shares: lines with their byte offsets, the turn and error values, times, text."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, Literal

from tideline_core.errors import InvalidInput
from tideline_core.text.dates import parse_instant

# Past this an epoch number is read as milliseconds (1e11 seconds is the year 5138).
EPOCH_MS_ABOVE = 1e11


@dataclass(frozen=True)
class Line:
    """One line of a file: its number (from 1 at `start_offset`), the byte offset just after it, its text.

    `text` is None when the bytes are not UTF-8; `complete` is False for a last line with no newline
    (a file still being written may end mid-line).
    """

    number: int
    end: int
    text: str | None
    complete: bool = True


@dataclass(frozen=True)
class SourceTurn:
    """One turn read from a session file, before validation: what it said, who said it, when, in which session.

    `offset` is the byte offset just after the line it came from, so a reader can resume there;
    `created_at` is None when neither the line nor any line before it carried a time.
    """

    role: str
    content: str
    session_id: str
    created_at: datetime | None
    line: int
    offset: int
    native_id: str = ""
    speaker: str = ""


@dataclass(frozen=True)
class Malformed:
    """A line that could not be read as what its format says, and why; the import goes on without it.

    `offset` is where a resuming reader should start: after the line, or at it when the line is an
    incomplete last line (it may be whole next time). `where` names the spot when it is not a line
    (an item of a JSON document's list).
    """

    line: int
    offset: int
    reason: str
    where: str = ""

    def location(self, path: str | Path) -> str:
        """`file:line`, or `file:where` for an item of a JSON document."""
        return f"{path}:{self.where or self.line}"


SessionItem = SourceTurn | Malformed


def lines_of(path: str | Path, start_offset: int = 0) -> Iterator[Line]:
    """The file's lines from `start_offset` (a byte offset at a line start), streamed, never read whole."""
    with open(path, "rb") as stream:
        stream.seek(start_offset)
        offset = start_offset
        for number, raw in enumerate(stream, start=1):
            offset += len(raw)
            complete = raw.endswith(b"\n")
            try:
                text: str | None = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            yield Line(number, offset, text, complete)


def json_object(line: Line) -> dict[str, Any] | Malformed | None:
    """The line as a JSON object; None for a blank line; a Malformed saying why otherwise."""
    if line.text is None:
        return Malformed(line.number, line.end, "not UTF-8 text")
    if not line.text.strip():
        return None
    try:
        value = json.loads(line.text)
    except json.JSONDecodeError as exc:
        if not line.complete:
            # Still being written: report it, but leave the offset before it so a later read retries.
            return Malformed(line.number, line.end - len(line.text.encode()), "incomplete last line (no newline)")
        return Malformed(line.number, line.end, f"not JSON ({exc.msg} at column {exc.colno})")
    if not isinstance(value, dict):
        return Malformed(line.number, line.end, f"a JSON {type(value).__name__}, expected an object")
    return value


def each_record(
    lines: Iterable[Line], read: Callable[[dict[str, Any], Line], SessionItem | None]
) -> Iterator[SessionItem]:
    """What `read` makes of each line's JSON object, streamed; `read` returns None to pass a line over.

    A blank line is passed over; a line that is not a JSON object, or whose object `read` refuses with
    InvalidInput, is reported as Malformed and the reading goes on.
    """
    for line in lines:
        record = json_object(line)
        if record is None:
            continue
        if isinstance(record, Malformed):
            yield record
            continue
        try:
            item = read(record, line)
        except InvalidInput as exc:
            yield Malformed(line.number, line.end, str(exc))
            continue
        if item is not None:
            yield item


# How a time written without a zone is read: as UTC (the store's rule), or in this machine's zone ("local").
NaiveZone = tzinfo | Literal["local"]


class Clock:
    """Each turn's time: its own, else the last time seen before it in the file (a session's start counts)."""

    def __init__(self, naive_zone: NaiveZone = UTC) -> None:
        self.last: datetime | None = None
        self.naive_zone = naive_zone

    def read(self, value: Any, field: str = "timestamp") -> datetime | None:
        """Parse `value` (ISO-8601 text, or epoch seconds/milliseconds) and remember it; missing → the last.

        Raises InvalidInput naming `field` for a value that is not a time.
        """
        if value is None or value == "":
            return self.last
        self.last = instant(value, field, self.naive_zone)
        return self.last


def instant(value: Any, field: str, naive_zone: NaiveZone = UTC) -> datetime:
    """ISO-8601 text or an epoch number as an aware UTC datetime; text without a zone is in `naive_zone`."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidInput(field, f"must be an ISO-8601 date-time or epoch seconds, got {value!r}")
    if isinstance(value, str):
        parsed = parse_instant(value, field)  # a zone-less time comes back as UTC
        if naive_zone is UTC or not _zoneless(value):
            return parsed
        wall = parsed.replace(tzinfo=None)
        try:
            # A naive datetime's astimezone() reads it in this machine's zone, with that date's DST.
            local = wall.astimezone(UTC) if naive_zone == "local" else wall.replace(tzinfo=naive_zone).astimezone(UTC)
        except (OverflowError, ValueError, OSError):
            raise InvalidInput(
                field, f"must fall between years 1 and 9999 once converted to UTC, got {value!r}"
            ) from None
        return local
    seconds = value / 1000 if value > EPOCH_MS_ABOVE else value
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise InvalidInput(field, f"must be a time between years 1 and 9999, got {value!r}") from None


def _zoneless(text: str) -> bool:
    stripped = text.strip()
    if stripped.endswith(("Z", "z")):
        return False
    try:
        return datetime.fromisoformat(stripped).tzinfo is None
    except ValueError:
        return False


def text_of(content: Any, kinds: Sequence[str] = ("text",)) -> str | None:
    """A message's text: a string as is, or the text of the parts whose `type` is in `kinds`, joined.

    None when `content` is neither a string nor a list (the caller reports it); "" when it holds no text.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [part_text(part) for part in content if isinstance(part, Mapping) and part.get("type") in kinds]
    return "\n\n".join(t for t in texts if t)


def part_text(part: Mapping[str, Any]) -> str:
    text = part.get("text")
    return text if isinstance(text, str) else ""


def lowered(*prefixes: str) -> tuple[str, ...]:
    """Prefixes for `starts_with_any`, compared without case."""
    return tuple(prefix.lower() for prefix in prefixes)


def starts_with_any(text: str, prefixes: tuple[str, ...]) -> bool:
    """Whether `text`, leading space aside, starts with one of `prefixes` (made by `lowered`)."""
    return text.lstrip()[:64].lower().startswith(prefixes)
