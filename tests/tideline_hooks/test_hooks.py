"""Runtime hook events read into values, the answers runtimes read back, and transcripts stored as they grow."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tideline_core.compose import compose
from tideline_core.embedding import NoEmbedder
from tideline_core.errors import InvalidInput
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.status import counts
from tideline_hooks import (
    EVENTS,
    HookEvent,
    Mark,
    TranscriptOffsets,
    hook_output,
    parse_event,
    parse_runtime,
    record_transcript,
    respond,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE_SESSION = "7f3c2a9e-4b1d-4e8a-9c2f-1a2b3c4d5e6f"
CODEX_SESSION = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def event(name: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "hooks" / f"{name}.json").read_text(encoding="utf-8"))
    data.update(changes)
    return {k: v for k, v in data.items() if v is not ...}


def refused(data: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        parse_event(data)
    return caught.value


# --- reading events ---------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", sorted(p.stem for p in (FIXTURES / "hooks").glob("*.json")))
def test_every_documented_event_shape_parses(fixture: str) -> None:
    parsed = parse_event(event(fixture))
    assert parsed.name in EVENTS
    assert parsed.session_id == (CODEX_SESSION if fixture.startswith("codex") else CLAUDE_SESSION)
    assert parsed.transcript_path.endswith(".jsonl") and parsed.transcript_path.startswith("/home/u/")


def test_a_prompt_is_read_as_it_was_typed() -> None:
    assert parse_event(event("claude_user_prompt_submit")) == HookEvent(
        name="UserPromptSubmit",
        session_id=CLAUDE_SESSION,
        transcript_path=f"/home/u/.claude/projects/-home-u-shop/{CLAUDE_SESSION}.jsonl",
        prompt="When does the ferry timetable change?",
    )
    assert parse_event(event("codex_user_prompt_submit")).prompt == "Rename the config loader to load_settings."


def test_a_session_start_without_a_transcript_is_fine_but_a_stop_needs_one() -> None:
    assert parse_event(event("claude_session_start", transcript_path=None)).transcript_path == ""
    assert refused(event("claude_stop", transcript_path=None)).field == "transcript_path"
    assert refused(event("claude_session_end", transcript_path=...)).field == "transcript_path"


def test_a_relative_transcript_path_is_refused() -> None:
    problem = refused(event("claude_stop", transcript_path="projects/x.jsonl"))
    assert (problem.field, "absolute") == ("transcript_path", "absolute") and "absolute" in problem.rule


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ([1, 2], "event"),
        ("SessionStart", "event"),
        ({"session_id": "s"}, "hook_event_name"),
        ({"hook_event_name": "Notification", "session_id": "s"}, "hook_event_name"),
        ({"hook_event_name": 7, "session_id": "s"}, "hook_event_name"),
        ({"hook_event_name": "SessionStart"}, "session_id"),
        ({"hook_event_name": "SessionStart", "session_id": "  "}, "session_id"),
        ({"hook_event_name": "SessionStart", "session_id": "x" * 257}, "session_id"),
        ({"hook_event_name": "SessionStart", "session_id": "a\x00b"}, "session_id"),
        ({"hook_event_name": "UserPromptSubmit", "session_id": "s"}, "prompt"),
        ({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": None}, "prompt"),
        ({"hook_event_name": "Stop", "session_id": "s", "transcript_path": 3}, "transcript_path"),
    ],
)
def test_a_bad_event_is_refused_naming_the_field(data: Any, field: str) -> None:
    assert refused(data).field == field


def test_an_unknown_event_names_the_ones_answered() -> None:
    rule = refused({"hook_event_name": "Notification", "session_id": "s"}).rule
    assert all(name in rule for name in EVENTS) and "'Notification'" in rule


def test_fields_a_newer_runtime_adds_are_ignored() -> None:
    assert parse_event(event("claude_stop", some_new_field={"x": 1})).name == "Stop"


def test_runtimes_are_claude_code_and_codex() -> None:
    assert [parse_runtime(r) for r in ("claude-code", "codex")] == ["claude-code", "codex"]
    with pytest.raises(InvalidInput) as caught:
        parse_runtime("cursor")
    assert caught.value.field == "runtime"


# --- answers ----------------------------------------------------------------------------------


def test_context_is_answered_in_the_runtimes_shape_for_the_two_inject_events() -> None:
    assert hook_output("SessionStart", "# Tideline memory") == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "# Tideline memory"}
    }
    assert hook_output("UserPromptSubmit", "x")["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"  # type: ignore[index]


def test_no_context_or_a_recording_event_prints_nothing() -> None:
    assert hook_output("SessionStart", "") is None
    assert hook_output("Stop", "anything") is None


# --- offsets ----------------------------------------------------------------------------------


def test_a_mark_saved_is_read_back_and_nothing_half_written_is_left(tmp_path: Path) -> None:
    offsets = TranscriptOffsets.under(tmp_path)
    with offsets.held("/t/a.jsonl") as held:
        assert held.read() == Mark()
        held.save(Mark(120, "s1", 42))
    with offsets.held("/t/a.jsonl") as held:
        assert held.read() == Mark(120, "s1", 42)
    with offsets.held("/t/b.jsonl") as held:
        assert held.read() == Mark()  # each transcript its own
    files = sorted(p.suffix for p in (tmp_path / "hooks" / "offsets").iterdir())
    assert files == [".json", ".lock", ".lock"]


def test_a_damaged_mark_file_reads_as_a_fresh_start(tmp_path: Path) -> None:
    offsets = TranscriptOffsets.under(tmp_path)
    with offsets.held("/t/a.jsonl") as held:
        held.save(Mark(10, "s", 1))
        held.path.write_text('{"transcript": "/t/a.jsonl", "offset": "ten"}')
        assert held.read() == Mark()
        held.path.write_text("{not json")
        assert held.read() == Mark()


# --- recording a transcript as it grows -------------------------------------------------------


@pytest.fixture
def service(settings: Settings, database: Database) -> Iterator[Service]:
    built = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder(), database=database)
    yield built


def stored(database: Database) -> int:
    with database.read() as conn:
        return counts(conn, "alice").context_turns


def claude_transcript(tmp_path: Path) -> Path:
    return Path(shutil.copy(FIXTURES / "sessions" / f"{CLAUDE_SESSION}.jsonl", tmp_path / f"{CLAUDE_SESSION}.jsonl"))


def line(role: str, text: str, second: int) -> str:
    return json.dumps(
        {
            "type": role,
            "sessionId": CLAUDE_SESSION,
            "uuid": f"n-{second}",
            "timestamp": f"2026-01-20T12:00:{second:02d}Z",
            "message": {"role": role, "content": text},
        }
    )


def test_a_transcript_is_stored_once_and_then_only_what_it_gained(
    service: Service, database: Database, tmp_path: Path
) -> None:
    transcript = claude_transcript(tmp_path)
    offsets = TranscriptOffsets.under(tmp_path / "home")

    def record() -> int:
        report = record_transcript(
            service, "alice", "claude-code", str(transcript), session_id=CLAUDE_SESSION, offsets=offsets
        )
        return report.turns_added

    assert (record(), record()) == (5, 0)
    reply = line("assistant", "It changes on Mondays.", 2)
    with open(transcript, "a", encoding="utf-8") as out:
        out.write(line("user", "And the ferry timetable?", 1) + "\n" + reply[:40])
    assert record() == 1  # the reply is still being written: half a line
    with open(transcript, "a", encoding="utf-8") as out:
        out.write(reply[40:] + "\n")
    assert (record(), stored(database)) == (1, 7)
    # The keys are the import's: importing the whole file now adds nothing.
    assert service.import_sessions("alice", [transcript]).turns_added == 0


def test_a_transcript_replaced_by_a_shorter_file_is_read_from_its_start(
    service: Service, database: Database, tmp_path: Path
) -> None:
    transcript = claude_transcript(tmp_path)
    offsets = TranscriptOffsets.under(tmp_path / "home")
    record_transcript(service, "alice", "claude-code", str(transcript), session_id=CLAUDE_SESSION, offsets=offsets)
    transcript.unlink()
    transcript.write_text(line("user", "A new beginning about lighthouses", 5) + "\n", encoding="utf-8")
    report = record_transcript(
        service, "alice", "claude-code", str(transcript), session_id=CLAUDE_SESSION, offsets=offsets
    )
    assert (report.turns_added, stored(database)) == (1, 6)


def test_a_codex_session_read_from_the_middle_keeps_its_session(
    service: Service, database: Database, tmp_path: Path
) -> None:
    source = next((FIXTURES / "sessions").glob("rollout-*.jsonl"))
    transcript = Path(shutil.copy(source, tmp_path / source.name))
    offsets = TranscriptOffsets.under(tmp_path / "home")
    record_transcript(service, "alice", "codex", str(transcript), session_id=CODEX_SESSION, offsets=offsets)
    reply = {
        "timestamp": "2025-10-29T01:10:00.000Z",
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks!"}]},
    }
    with open(transcript, "a", encoding="utf-8") as out:
        out.write(json.dumps(reply) + "\n")
    record_transcript(service, "alice", "codex", str(transcript), session_id="another-id", offsets=offsets)
    with database.read() as conn:
        sessions = {row[0] for row in conn.exec_driver_sql("SELECT DISTINCT session_id FROM context_turns")}
    assert sessions == {CODEX_SESSION}


def test_a_missing_transcript_is_refused_naming_the_field(service: Service, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        record_transcript(
            service, "alice", "claude-code", str(tmp_path / "gone.jsonl"), session_id="s",
            offsets=TranscriptOffsets.under(tmp_path),
        )  # fmt: skip
    assert caught.value.field == "transcript_path"


def test_an_empty_prompt_or_an_empty_memory_answers_nothing(service: Service, tmp_path: Path) -> None:
    offsets = TranscriptOffsets.under(tmp_path)
    blank = parse_event(event("claude_user_prompt_submit", prompt="   "))
    start = parse_event(event("claude_session_start"))
    for each in (blank, start):
        assert respond(service, each, agent_id="alice", runtime="claude-code", offsets=offsets).output() is None


def test_a_session_start_shows_the_soul_and_a_prompt_recalls_what_bears_on_it(
    service: Service, settings: Settings, tmp_path: Path
) -> None:
    from tideline_core.domain.inputs import NarrativeIn

    soul = settings.home / "agents" / "alice" / "SOUL.md"
    soul.parent.mkdir(parents=True)
    soul.write_text("I keep track of ferries and timetables.", encoding="utf-8")
    service.write_narrative("alice", NarrativeIn(gesture="The ferry timetable changes every Monday in winter"))
    offsets = TranscriptOffsets.under(tmp_path)
    start = respond(service, parse_event(event("claude_session_start")), agent_id="alice", runtime="claude-code",
                    offsets=offsets).output()  # fmt: skip
    turn = respond(service, parse_event(event("claude_user_prompt_submit")), agent_id="alice", runtime="claude-code",
                   offsets=offsets).output()  # fmt: skip
    assert start is not None and "I keep track of ferries" in start["hookSpecificOutput"]["additionalContext"]
    assert turn is not None and "changes every Monday" in turn["hookSpecificOutput"]["additionalContext"]
    assert turn["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
