"""Time in one form: timezone-aware UTC inside, human formats only at the edges."""

from __future__ import annotations

from datetime import UTC, datetime

from tideline_core.errors import InvalidInput


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC (that is how the store writes them)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_instant(value: str | datetime, field: str) -> datetime:
    """ISO-8601 date or date-time → aware UTC; anything else is an InvalidInput naming `field`."""
    if isinstance(value, datetime):
        return as_utc(value)
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            field, f"must be an ISO-8601 date or date-time such as 2026-05-08 or 2026-05-08T13:56:00Z, got {value!r}"
        ) from None
    try:
        return as_utc(parsed)
    except OverflowError:
        raise InvalidInput(field, f"must fall between years 1 and 9999 once converted to UTC, got {value!r}") from None


def iso(value: datetime) -> str:
    """ISO-8601 in UTC ending in Z, as every result shows a time (pydantic writes aware UTC times so)."""
    return as_utc(value).isoformat().replace("+00:00", "Z")


def human(value: datetime) -> str:
    """A compact UTC form for people and prompts."""
    return as_utc(value).strftime("%Y-%m-%d %H:%M UTC")
