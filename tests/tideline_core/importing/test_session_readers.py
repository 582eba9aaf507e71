"""Each runtime's session files read as what was said, by whom, when and in which session; bad lines as values."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from tideline_core.importing import (
    Line,
    Malformed,
    SessionItem,
    SourceTurn,
    parse_claude_code,
    parse_codex,
    parse_hermes_lines,
    parse_jsonl,
    read_claude_code,
    read_codex,
    read_hermes,
    read_jsonl,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
CLAUDE = FIXTURES / "7f3c2a9e-4b1d-4e8a-9c2f-1a2b3c4d5e6f.jsonl"
CODEX = FIXTURES / "rollout-2025-10-29T00-59-38-0199a213-81c0-7800-8aa1-bbab2a035a53.jsonl"
HERMES_JSONL = FIXTURES / "20260511_203108_a1b2c3d4.jsonl"
HERMES_JSON = FIXTURES / "session_20260302_101500_e5f6a7b8.json"
GENERIC = FIXTURES / "generic.jsonl"


def said(items: list[SessionItem]) -> list[tuple[int, str, str, str, str]]:
    """(line, session, role, time, text) of each turn; fails on a malformed item."""
    assert all(isinstance(i, SourceTurn) for i in items), [i for i in items if isinstance(i, Malformed)]
    return [
        (t.line, t.session_id, t.role, t.created_at.isoformat() if t.created_at else "", t.content)
        for t in items
        if isinstance(t, SourceTurn)
    ]


def lines(*texts: str) -> list[Line]:
    out, end = [], 0
    for number, text in enumerate(texts, start=1):
        end += len(text.encode()) + 1
        out.append(Line(number, end, text + "\n"))
    return out


def test_a_claude_code_transcript_yields_what_was_said_and_passes_over_tools_thinking_and_the_harness() -> None:
    session = "7f3c2a9e-4b1d-4e8a-9c2f-1a2b3c4d5e6f"
    assert said(list(read_claude_code(CLAUDE))) == [
        (3, session, "user", "2026-01-20T11:57:17.716000+00:00", "Why does the deploy fail on Fridays?"),
        (5, session, "assistant", "2026-01-20T11:57:21.002000+00:00", "Let me look at the cron schedule."),
        (
            8,
            session,
            "assistant",
            "2026-01-20T11:57:25+00:00",
            "The backup job at 17:00 on Fridays locks the database while the deploy migrates it.",
        ),
        (13, session, "user", "2026-01-20T11:59:00+00:00", "Move the backup to Sunday then."),
        (15, session, "assistant", "2026-01-20T11:59:30+00:00", "Done: the backup now runs on Sundays at 03:00."),
    ]
    first = next(iter(read_claude_code(CLAUDE)))
    assert isinstance(first, SourceTurn) and first.native_id == "u-1"


def test_a_claude_code_transcript_read_from_an_offset_gives_only_what_was_appended(tmp_path: Path) -> None:
    transcript = tmp_path / "live.jsonl"
    shutil.copy(CLAUDE, transcript)
    first = list(read_claude_code(transcript))
    kept = first[-1].offset
    assert kept == transcript.stat().st_size

    reply = {
        "type": "user",
        "sessionId": "live",
        "uuid": "u-20",
        "timestamp": "2026-01-20T12:05:00Z",
        "message": {"role": "user", "content": "Thanks, that fixed it."},
    }
    half = json.dumps({**reply, "uuid": "u-21", "message": {"role": "user", "content": "One more thing"}})
    with open(transcript, "a", encoding="utf-8") as out:
        out.write(json.dumps(reply) + "\n" + half[:30])  # the runtime is still writing the next line
    appended = list(read_claude_code(transcript, start_offset=kept))
    assert said(appended[:1]) == [(1, "live", "user", "2026-01-20T12:05:00+00:00", "Thanks, that fixed it.")]
    (partial,) = appended[1:]
    assert isinstance(partial, Malformed) and "incomplete last line" in partial.reason
    # A partial last line is not consumed: resuming from its offset reads it once it is whole.
    with open(transcript, "a", encoding="utf-8") as out:
        out.write(half[30:] + "\n")
    assert said(list(read_claude_code(transcript, start_offset=partial.offset))) == [
        (1, "live", "user", "2026-01-20T12:05:00+00:00", "One more thing")
    ]


def test_a_codex_rollout_yields_the_users_and_the_assistants_messages_without_the_harness_context() -> None:
    session = "0199a213-81c0-7800-8aa1-bbab2a035a53"
    assert said(list(read_codex(CODEX))) == [
        (4, session, "user", "2025-10-29T00:59:40.120000+00:00", "Rename the config loader to load_settings."),
        (10, session, "assistant", "2025-10-29T00:59:50+00:00", "Renamed it in 3 files; the tests pass."),
    ]


def test_the_older_codex_layout_is_read_the_same_way() -> None:
    items = parse_codex(
        lines(
            '{"id": "old-1", "timestamp": "2025-05-01T08:00:00Z", "instructions": "be brief"}',
            '{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<user_instructions>x'
            '</user_instructions>"}]}',
            '{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add a retry"}]}',
            '{"record_type": "state"}',
            '{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Added."}]}',
        ),
        default_session="rollout-old",
    )
    assert said(list(items)) == [
        (3, "old-1", "user", "2025-05-01T08:00:00+00:00", "Add a retry"),
        (5, "old-1", "assistant", "2025-05-01T08:00:00+00:00", "Added."),
    ]


def test_a_hermes_transcript_keeps_user_and_assistant_text_without_tool_turns_or_thinking() -> None:
    session = "20260511_203108_a1b2c3d4"
    assert said(list(read_hermes(HERMES_JSONL, naive_zone=UTC))) == [
        (2, session, "user", "2026-05-11T20:31:08.100000+00:00", "Remind me what we decided about the garden?"),
        (5, session, "assistant", "2026-05-11T20:31:11+00:00", "We decided on tomatoes along the south fence."),
        (6, session, "user", "2026-05-11T20:32:00+00:00", "And the herbs?"),
        # No time of its own: the time of the line before it.
        (7, session, "assistant", "2026-05-11T20:32:00+00:00", "Basil by the kitchen door."),
    ]


def test_a_hermes_session_log_is_read_whole_its_messages_at_the_sessions_start() -> None:
    session, start = "20260302_101500_e5f6a7b8", "2026-03-02T10:15:00.123456+00:00"
    assert said(list(read_hermes(HERMES_JSON, naive_zone=UTC))) == [
        (1, session, "user", start, "周末去爬山吗？"),
        (4, session, "assistant", start, "周六晴天，适合去爬山。"),
        (5, session, "user", start, "好，那就周六。"),
    ]


def test_hermes_local_times_are_read_in_the_importing_machines_zone_unless_another_is_given() -> None:
    shanghai = timezone(timedelta(hours=8))
    (first, *_rest) = read_hermes(HERMES_JSON, naive_zone=shanghai)
    assert isinstance(first, SourceTurn) and first.created_at == datetime(2026, 3, 2, 2, 15, 0, 123456, tzinfo=UTC)
    wall = datetime(2026, 3, 2, 10, 15, 0, 123456)  # what Hermes wrote, in the zone of the machine it ran on
    (local, *_rest) = read_hermes(HERMES_JSON)
    assert isinstance(local, SourceTurn) and local.created_at == wall.astimezone(UTC)
    # A time that names its zone is that time wherever it is read.
    zoned = parse_hermes_lines(
        lines('{"role": "user", "content": "hi", "timestamp": "2026-03-02T10:15:00+02:00"}'), naive_zone=shanghai
    )
    assert said(list(zoned)) == [(1, "", "user", "2026-03-02T08:15:00+00:00", "hi")]


def test_a_bad_message_in_a_hermes_session_log_is_named_by_its_place_in_the_list(tmp_path: Path) -> None:
    log = tmp_path / "session_x.json"
    log.write_text(json.dumps({"session_id": "x", "messages": [{"role": "user", "content": 5}, "hi"]}))
    first, second = read_hermes(log)
    assert isinstance(first, Malformed) and first.location(log) == f"{log}:messages[0]"
    assert "content" in first.reason
    assert isinstance(second, Malformed) and second.location(log) == f"{log}:messages[1]"
    broken = tmp_path / "session_y.json"
    broken.write_text('{"messages": [')
    (item,) = read_hermes(broken)
    assert isinstance(item, Malformed) and "not a JSON session log" in item.reason


def test_generic_json_lines_keep_every_role_given_and_name_the_session_and_speaker() -> None:
    items = list(read_jsonl(GENERIC))
    assert said(items) == [
        (1, "errands", "user", "2026-02-01T09:00:00+00:00", "Book the dentist for Tuesday."),
        (2, "errands", "assistant", "2026-02-01T09:00:05+00:00", "Booked for Tuesday at 10:00."),
        (3, "errands", "system", "2026-02-01T09:00:06+00:00", "Reminder set."),
        (4, "errands-2", "user", "2026-02-04T18:00:00+00:00", "What did the dentist say?"),
    ]
    assert isinstance(items[3], SourceTurn) and items[3].speaker == "Sam"


def test_generic_lines_without_a_session_or_time_take_the_files_name_and_no_time() -> None:
    items = list(parse_jsonl(lines('{"role": "user", "content": "hi"}'), default_session="notes"))
    assert said(items) == [(1, "notes", "user", "", "hi")]
    epoch = list(parse_jsonl(lines('{"role": "user", "content": "hi", "timestamp": 1767225600}')))
    assert isinstance(epoch[0], SourceTurn) and epoch[0].created_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_malformed_lines_come_back_as_values_with_their_line_and_why_and_the_rest_is_read() -> None:
    good = '{"role": "user", "content": "still here", "timestamp": "2026-01-01T00:00:00Z"}'
    bad = [
        ("{not json", "not JSON"),
        ("[1, 2]", "a JSON list, expected an object"),
        ('{"role": "user", "content": "x", "timestamp": "last tuesday"}', "timestamp: must be an ISO-8601"),
        ('{"role": "user", "content": {"nested": 1}}', "content: must be a string or a list"),
    ]
    items = list(parse_jsonl(lines(*(text for text, _ in bad), good)))
    malformed = [i for i in items if isinstance(i, Malformed)]
    assert [i.line for i in malformed] == [1, 2, 3, 4]
    for item, (_, reason) in zip(malformed, bad, strict=True):
        assert reason in item.reason, item
    assert said(items[-1:]) == [(5, "", "user", "2026-01-01T00:00:00+00:00", "still here")]


def test_every_reader_reports_a_line_that_is_not_utf8_and_goes_on() -> None:
    for parse, good in (
        (parse_jsonl, '{"role": "user", "content": "ok"}'),
        (parse_hermes_lines, '{"role": "user", "content": "ok"}'),
        (parse_claude_code, '{"type": "user", "message": {"role": "user", "content": "ok"}}'),
        (parse_codex, '{"type": "response_item", "payload": {"type": "message", "role": "user", "content": "ok"}}'),
    ):
        items = list(parse([Line(1, 3, None), *lines(good)]))
        assert isinstance(items[0], Malformed) and items[0].reason == "not UTF-8 text", parse
        assert [i.content for i in items[1:] if isinstance(i, SourceTurn)] == ["ok"], parse


def test_a_claude_code_line_of_a_said_type_without_a_message_is_malformed_other_types_are_passed_over() -> None:
    items = list(
        parse_claude_code(
            lines(
                '{"type": "assistant", "timestamp": "2026-01-01T00:00:00Z"}',
                '{"type": "queue-operation", "operation": "dequeue"}',
                '{"type": "user", "message": {"role": "user", "content": 7}}',
            )
        )
    )
    assert [(i.line, i.reason) for i in items if isinstance(i, Malformed)] == [
        (1, "a assistant line without a message object"),
        (3, "message.content: must be a string or a list of parts"),
    ]
