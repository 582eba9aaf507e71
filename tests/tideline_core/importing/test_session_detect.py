"""A session file's format told from its first lines; the files a list of paths names; each turn's import key."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tideline_core.errors import InvalidInput
from tideline_core.importing import TurnKeys, detect_format, plan_import, turn_key

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("7f3c2a9e-4b1d-4e8a-9c2f-1a2b3c4d5e6f.jsonl", "claude-code"),
        ("rollout-2025-10-29T00-59-38-0199a213-81c0-7800-8aa1-bbab2a035a53.jsonl", "codex"),
        ("20260511_203108_a1b2c3d4.jsonl", "hermes"),
        ("session_20260302_101500_e5f6a7b8.json", "hermes"),
        ("generic.jsonl", "jsonl"),
    ],
)
def test_each_runtimes_file_is_told_from_its_first_lines(name: str, expected: str) -> None:
    assert detect_format(FIXTURES / name) == expected


def test_a_file_in_no_known_shape_is_not_given_a_format(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text('{"event": "click"}\n{"event": "scroll"}\n')
    text = tmp_path / "notes.json"
    text.write_text("just some words\n")
    index = tmp_path / "sessions-index.json"
    index.write_text(json.dumps({"version": 1, "entries": []}, indent=2))
    assert [detect_format(p) for p in (other, text, index)] == [None, None, None]


def test_hermes_lines_without_a_session_meta_are_told_by_their_tool_call_fields(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"role": "user", "content": "hi", "timestamp": "2026-01-01T00:00:00"}\n'
        '{"role": "assistant", "content": "", "tool_calls": [], "timestamp": "2026-01-01T00:00:01"}\n'
    )
    assert detect_format(path) == "hermes"


def test_a_directory_is_read_recursively_and_what_is_not_a_session_is_passed_over_saying_why(tmp_path: Path) -> None:
    nested = tmp_path / "projects" / "shop"
    nested.mkdir(parents=True)
    for fixture in FIXTURES.iterdir():
        shutil.copy(fixture, nested / fixture.name)
    (nested / "sessions-index.json").write_text(json.dumps({"version": 1, "entries": []}, indent=2))
    (nested / "empty.jsonl").write_text("")
    (nested / "README.md").write_text("not looked at")

    plan = plan_import([tmp_path])
    assert sorted((p.name, f) for p, f in plan.files) == sorted(
        [
            ("7f3c2a9e-4b1d-4e8a-9c2f-1a2b3c4d5e6f.jsonl", "claude-code"),
            ("rollout-2025-10-29T00-59-38-0199a213-81c0-7800-8aa1-bbab2a035a53.jsonl", "codex"),
            ("20260511_203108_a1b2c3d4.jsonl", "hermes"),
            ("session_20260302_101500_e5f6a7b8.json", "hermes"),
            ("generic.jsonl", "jsonl"),
        ]
    )
    assert sorted((p.name, why) for p, why in plan.passed_over) == [
        ("empty.jsonl", "empty"),
        ("sessions-index.json", "not a session file in a known format"),
    ]


def test_a_format_given_is_used_for_every_file_without_sniffing() -> None:
    plan = plan_import([FIXTURES / "generic.jsonl"], "hermes")
    assert [f for _p, f in plan.files] == ["hermes"]


def test_paths_that_cannot_be_imported_are_refused_naming_the_argument_and_the_rule(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as missing:
        plan_import([FIXTURES / "generic.jsonl", tmp_path / "nope.jsonl"])
    assert missing.value.field == "PATH" and "nope.jsonl does not exist" in missing.value.rule
    unknown = tmp_path / "other.jsonl"
    unknown.write_text('{"event": "click"}\n')
    with pytest.raises(InvalidInput) as untold:
        plan_import([unknown])
    assert untold.value.field == "format" and "give --format" in untold.value.rule
    with pytest.raises(InvalidInput) as bad_format:
        plan_import([unknown], "chatgpt")
    assert bad_format.value.field == "format" and "claude-code" in bad_format.value.rule


def test_the_same_words_said_again_at_the_same_time_get_a_key_of_their_own_and_a_reread_gets_the_same_keys() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    later = datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)
    turns = [("s", "user", "ok", at), ("s", "user", "ok", at), ("s", "user", "ok", later), ("s", "user", "ok", None)]

    def keys() -> list[str]:
        maker = TurnKeys()
        return [maker.key(*turn) for turn in turns]

    first = keys()
    assert len(set(first)) == 4
    assert first == keys()
    assert first[0] == turn_key("s", "user", "ok", at) and first[2] == turn_key("s", "user", "ok", later)
    assert turn_key("s", "user", "ok", at) != turn_key("t", "user", "ok", at) != turn_key("s", "assistant", "ok", at)
