"""LoCoMo-format conversations: parse sessions, turns (with image captions), dates and QA evidence."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tideline_core.errors import InvalidInput


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    at: datetime


@dataclass(frozen=True)
class Question:
    question: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


_SESSION = re.compile(r"^session_(\d+)$")


def parse_session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    return f"{text} [shared an image: {caption}]" if caption else text


def _evidence(raw: Any, known: set[str]) -> tuple[str, ...]:
    ids: list[str] = []
    for item in raw if isinstance(raw, list) else [raw]:
        for part in str(item).split(";"):
            part = part.strip()
            if part in known:
                ids.append(part)
    return tuple(dict.fromkeys(ids))


def parse_sample(sample: dict[str, Any], index: int) -> Conversation:
    try:
        conversation = sample["conversation"]
        qa = sample["qa"]
    except (KeyError, TypeError):
        raise InvalidInput(f"sample {index}", "needs 'conversation' and 'qa' keys (LoCoMo format)") from None
    turns: list[Turn] = []
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION.match(key)))
    for number in numbers:
        stamp_text = conversation.get(f"session_{number}_date_time")
        if not stamp_text:
            raise InvalidInput(f"sample {index} session_{number}_date_time", "is missing")
        try:
            start = parse_session_time(stamp_text)
        except ValueError:
            raise InvalidInput(
                f"sample {index} session_{number}_date_time",
                f"must look like '1:56 pm on 8 May, 2023', got {stamp_text!r}",
            ) from None
        for offset, turn in enumerate(conversation[f"session_{number}"]):
            # Turns of one session share its stamp; a second apart keeps their order in time.
            turns.append(
                Turn(str(turn["dia_id"]), str(turn["speaker"]), turn_text(turn), start + timedelta(seconds=offset))
            )
    known = {t.dia_id for t in turns}
    questions = []
    for item in qa:
        category = int(item.get("category", 0))
        evidence = _evidence(item.get("evidence", []), known)
        if category in (1, 2, 3, 4) and evidence:
            questions.append(Question(str(item["question"]), evidence, category))
    return Conversation(str(sample.get("sample_id", f"conv-{index}")), tuple(turns), tuple(questions))


def load(path: Path) -> list[Conversation]:
    """Every conversation in a LoCoMo-format JSON file; a clear InvalidInput for a wrong path or shape."""
    if not path.is_file():
        raise InvalidInput("path", f"{path} is not a file (expected a LoCoMo-format JSON file)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput("path", f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise InvalidInput("path", f"{path} must hold a JSON list of samples (LoCoMo format)")
    return [parse_sample(sample, i) for i, sample in enumerate(data)]


def session_of(dia_id: str) -> str:
    """'D12:3' → 'D12'."""
    return dia_id.split(":", 1)[0]
