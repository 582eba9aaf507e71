"""A page's query string and forms parsed into the service's inputs; a bad value is InvalidInput naming its field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tideline_core.domain.inputs import ConversationLine, explain_validation
from tideline_core.errors import InvalidInput

M = TypeVar("M", bound=BaseModel)


def model(cls: type[M], **values: Any) -> M:
    """The input built from the page's values (blank ones left to their defaults), or InvalidInput naming the field."""
    try:
        return cls(**{k: v for k, v in values.items() if v not in (None, "")})
    except ValidationError as exc:
        raise explain_validation(exc) from exc


def pasted_lines(text: str) -> list[ConversationLine]:
    """Lines pasted as `speaker: text` (a line without a colon has no speaker), blank lines skipped."""
    lines: list[ConversationLine] = []
    for number, raw in enumerate(text.splitlines()):
        line = raw.strip()
        if not line:
            continue
        speaker, sep, said = line.partition(":")
        if not sep or len(speaker) > 40 or not said.strip():
            speaker, said = "", line
        try:
            lines.append(ConversationLine(speaker=speaker.strip(), text=said.strip()))
        except ValidationError as exc:
            raise InvalidInput("lines", f"line {number + 1}: {explain_validation(exc).rule}") from exc
    return lines


def number(value: str, name: str, parse: Callable[[str], Any] = int) -> Any:
    """A number from the page, None when blank; InvalidInput naming the field otherwise."""
    if not value:
        return None
    try:
        return parse(value)
    except ValueError as exc:
        raise InvalidInput(name, f"must be a number, got {value[:40]!r}") from exc
