"""MADial-Bench (Chinese): event memories per user, dialogues with a test turn, published top-20 runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tideline_core.errors import InvalidInput

MEMORY_FILE = "MADial-Bench-zh-memory.json"
DIALOGUE_FILE = "MADial-Bench-zh-dialogue.json"
PUBLISHED_DIR = "published-top20"


@dataclass(frozen=True)
class Memory:
    id: str
    user: str
    time: str
    scene: str
    emotion: str
    event: str


@dataclass(frozen=True)
class Dialogue:
    id: str
    user: str
    query_lines: tuple[str, ...]
    relevant: tuple[str, ...]
    lines: tuple[str, ...] = ()  # the whole dialogue, as in the file (markers and the lines past the test turn too)


def _json_lines(path: Path) -> list[Any]:
    if not path.is_file():
        raise InvalidInput("dir", f"{path} is missing (expected MADial-Bench JSON-lines files)")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput("dir", f"{path}:{number} is not a JSON line: {exc}") from None
    return rows


def load_memories(directory: Path) -> list[Memory]:
    memories = []
    for row in _json_lines(directory / MEMORY_FILE):
        for key, item in row.items():
            memories.append(
                Memory(
                    str(item.get("id", key)),
                    str(item["user-id"]),
                    str(item.get("time", "")),
                    str(item.get("scene", "")),
                    str(item.get("emotion", "")),
                    str(item["event"]),
                )
            )
    return memories


def dialogue_query(lines: list[str], test_turn: int) -> tuple[str, ...]:
    """The dialogue before the test turn, without the <BOD> marker, one entry per line."""
    before = [line.strip() for line in lines[:test_turn]]
    return tuple(line for line in before if line and line not in ("<BOD>", "<EOD>"))


SELF_SPEAKER = "Assistant"  # the agent's own lines in MADial dialogues


def parse_line(line: str) -> tuple[str, str]:
    """`<Bart>:"text"` → ("Bart", "text"); a line in another shape is ("", line)."""
    if line.startswith("<") and ">:" in line:
        name, rest = line[1:].split(">:", 1)
        return name.strip(), rest.strip().strip('"“”').strip() or rest.strip()
    return "", line


def load_dialogues(directory: Path) -> list[Dialogue]:
    dialogues: list[Dialogue] = []
    for row in _json_lines(directory / DIALOGUE_FILE):
        turn = int(row["test-turn"][0])
        dialogues.append(
            Dialogue(
                str(row.get("id", len(dialogues))),
                str(row["user-id"]),
                dialogue_query(row["dialogue"], turn),
                tuple(str(r) for r in row["relevant-id"]),
                tuple(str(line) for line in row["dialogue"]),
            )
        )
    return dialogues


def load_published(directory: Path) -> dict[str, dict[str, tuple[list[str], list[str]]]]:
    """{system name: {dialogue id: (top-20 ids, relevant ids)}} from the benchmark's own result files."""
    published: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
    folder = directory / PUBLISHED_DIR
    if not folder.is_dir():
        return published
    for path in sorted(folder.glob("*.json")):
        runs = {}
        for row in _json_lines(path):
            runs[str(row["id"])] = ([str(i) for i in row["top_20_ids"]], [str(i) for i in row["relevant_id"]])
        published[path.stem] = runs
    return published
