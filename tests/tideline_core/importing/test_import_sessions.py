"""Importing session files through the service on a real database: each turn once, at its own time, resumable."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from session_files import write_conversation
from sqlalchemy import func, select

from tideline_core.compose import compose
from tideline_core.domain.inputs import TimelineQuery
from tideline_core.embedding import NoEmbedder
from tideline_core.errors import InvalidInput
from tideline_core.importing import read_claude_code
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings
from tideline_core.store.schema import ContextTurn

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
AGENT = "alice"


@dataclass
class Observer:
    """Keeps what the import tells it; with `fail_at`, stops the import at that progress call (a crash midway)."""

    fail_at: int | None = None
    calls: int = 0
    seen: list[tuple[int, int]] = field(default_factory=list)
    bad: list[tuple[str, str]] = field(default_factory=list)
    passed: list[tuple[str, str]] = field(default_factory=list)

    def progress(self, done: int, total: int) -> None:
        self.calls += 1
        if self.fail_at is not None and self.calls >= self.fail_at:
            raise KeyboardInterrupt  # what Ctrl-C, or a process dying, does to the import midway
        self.seen.append((done, total))

    def malformed(self, where: str, reason: str) -> None:
        self.bad.append((where, reason))

    def passed_over(self, path: str, reason: str) -> None:
        self.passed.append((path, reason))


@dataclass
class Queue(NullJobQueue):
    embeds: list[str] = field(default_factory=list)

    def embed(self, agent_id: str, *, again: bool = False) -> bool:
        self.embeds.append(agent_id)
        return True


@pytest.fixture
def queue() -> Queue:
    return Queue()


@pytest.fixture
def service(tmp_path: Path, queue: Queue, store_url: str) -> Iterator[Service]:
    settings = Settings(home=tmp_path, embedder="none", database_url=store_url)
    built = compose(settings, jobs=queue, embedder=NoEmbedder())
    yield built
    built.close()


def stored(service: Service, agent: str = AGENT) -> int:
    with service.db.read() as conn:
        return int(
            conn.execute(
                select(func.count()).select_from(ContextTurn).where(ContextTurn.agent_id == agent)
            ).scalar_one()
        )


def conversation(path: Path, turns: int, *, start: datetime | None = None) -> Path:
    """A generic JSONL file of `turns` turns over three sessions in turn, a minute apart."""
    return write_conversation(path, turns, session_of=lambda i: f"s{i % 3}", step=timedelta(minutes=1), start=start)


def test_every_turn_is_stored_at_its_own_time_in_its_own_session(service: Service, queue: Queue) -> None:
    report = service.import_sessions(AGENT, [FIXTURES])
    assert (report.files, report.turns_added, report.turns_skipped, report.malformed) == (5, 18, 0, 0)
    assert (report.sessions_added, report.sessions_skipped) == (6, 0)
    assert report.queued and queue.embeds == [AGENT]

    codex = service.timeline(AGENT, TimelineQuery(session_id="0199a213-81c0-7800-8aa1-bbab2a035a53"))
    assert [(t.role, t.content, t.created_at) for t in codex] == [
        ("user", "Rename the config loader to load_settings.", datetime(2025, 10, 29, 0, 59, 40, 120000, tzinfo=UTC)),
        ("assistant", "Renamed it in 3 files; the tests pass.", datetime(2025, 10, 29, 0, 59, 50, tzinfo=UTC)),
    ]
    hermes = service.timeline(AGENT, TimelineQuery(session_id="20260302_101500_e5f6a7b8"))
    assert [t.content for t in hermes] == ["周末去爬山吗？", "周六晴天，适合去爬山。", "好，那就周六。"]
    assert hermes[0].metadata["imported_from"] == "hermes" and len(hermes[0].metadata["import_hash"]) == 32
    generic = service.timeline(AGENT, TimelineQuery(session_id="errands-2"))
    assert [(t.speaker, t.role) for t in generic] == [("Sam", "user")]


def test_a_reimport_adds_nothing_and_says_everything_was_already_there(service: Service, queue: Queue) -> None:
    first = service.import_sessions(AGENT, [FIXTURES])
    again = service.import_sessions(AGENT, [FIXTURES])
    assert (again.turns_added, again.turns_skipped, again.sessions_added, again.sessions_skipped) == (0, 18, 0, 6)
    assert not again.queued and queue.embeds == [AGENT]  # nothing new, nothing to embed
    assert stored(service) == first.turns_added == 18
    # Another agent's memory is its own: the same files add every turn for it.
    assert service.import_sessions("bob", [FIXTURES]).turns_added == 18


def test_an_import_that_dies_midway_adds_exactly_what_is_missing_when_run_again(
    service: Service, tmp_path: Path
) -> None:
    source = conversation(tmp_path / "long.jsonl", 100)
    with pytest.raises(KeyboardInterrupt):
        service.import_sessions(AGENT, [source], observer=Observer(fail_at=64), batch_size=10)
    committed = stored(service)
    assert committed == 60  # six whole batches; the seventh died with the import

    resumed = service.import_sessions(AGENT, [source], batch_size=10)
    assert (resumed.turns_added, resumed.turns_skipped) == (100 - committed, committed)
    assert stored(service) == 100
    assert service.import_sessions(AGENT, [source], batch_size=7).turns_added == 0


def test_malformed_lines_are_told_with_file_and_line_and_the_rest_is_stored(service: Service, tmp_path: Path) -> None:
    source = conversation(tmp_path / "mixed.jsonl", 4)
    rows = source.read_text().splitlines()
    rows.insert(1, "{broken")
    rows.insert(3, json.dumps({"role": "narrator", "content": "once upon a time"}))
    rows.append(json.dumps({"role": "user", "content": "x" * 100_001, "session": "s0"}))
    source.write_text("\n".join(rows) + "\n")
    observer = Observer()

    report = service.import_sessions(AGENT, [source], observer=observer)
    assert (report.turns_added, report.malformed) == (4, 3)
    assert [where for where, _ in observer.bad] == [f"{source}:2", f"{source}:4", f"{source}:7"]
    reasons = [reason for _, reason in observer.bad]
    assert reasons[0].startswith("not JSON") and reasons[1].startswith("role:")
    assert reasons[2].startswith("content:") and "100000" in reasons[2]
    assert observer.seen[-1] == (source.stat().st_size, source.stat().st_size)


def test_the_same_words_twice_are_both_kept_and_a_file_without_times_imports_once(
    service: Service, tmp_path: Path
) -> None:
    source = tmp_path / "chat.jsonl"
    source.write_text(
        '{"role": "user", "content": "ok", "session": "s"}\n'
        '{"role": "assistant", "content": "ok", "session": "s"}\n'
        '{"role": "user", "content": "ok", "session": "s"}\n'
    )
    before = datetime.now(UTC)
    assert service.import_sessions(AGENT, [source]).turns_added == 3
    turns = service.timeline(AGENT, TimelineQuery(session_id="s"))
    assert [t.role for t in turns] == ["user", "assistant", "user"]
    assert all(t.created_at >= before for t in turns)  # no time anywhere: stored at the import's time
    again = service.import_sessions(AGENT, [source])
    assert (again.turns_added, again.turns_skipped) == (0, 3)


def test_two_copies_of_a_file_store_its_turns_once(service: Service, tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "generic.jsonl", tmp_path / "a.jsonl")
    shutil.copy(FIXTURES / "generic.jsonl", tmp_path / "b.jsonl")
    report = service.import_sessions(AGENT, [tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    assert (report.turns_added, report.turns_skipped) == (4, 4)


def test_a_file_that_cannot_be_imported_stops_the_import_before_anything_is_stored(
    service: Service, tmp_path: Path
) -> None:
    good = conversation(tmp_path / "good.jsonl", 3)
    with pytest.raises(InvalidInput) as refused:
        service.import_sessions(AGENT, [good, tmp_path / "missing.jsonl"])
    assert refused.value.field == "PATH"
    with pytest.raises(InvalidInput) as small:
        service.import_sessions(AGENT, [good], batch_size=0)
    assert small.value.field == "batch_size"
    assert stored(service) == 0


def test_a_batch_looks_up_its_keys_within_its_own_time_span(service: Service, tmp_path: Path) -> None:
    # Turns stored long before, with the same words and session, are not mistaken for this file's.
    older = conversation(tmp_path / "older.jsonl", 20, start=datetime(2020, 1, 1, tzinfo=UTC))
    newer = conversation(tmp_path / "newer.jsonl", 20)
    assert service.import_sessions(AGENT, [older], batch_size=5).turns_added == 20
    assert service.import_sessions(AGENT, [newer], batch_size=5).turns_added == 20
    # One batch over both files: two stretches of time, each looked up in its own index range.
    again = service.import_sessions(AGENT, [older, newer], batch_size=40)
    assert (again.turns_added, again.turns_skipped) == (0, 40)


def test_turns_a_hook_stored_as_the_transcript_grew_are_not_stored_again_by_an_import(
    service: Service, tmp_path: Path
) -> None:
    transcript = tmp_path / "live.jsonl"
    lines = (FIXTURES / "7f3c2a9e-4b1d-4e8a-9c2f-1a2b3c4d5e6f.jsonl").read_bytes().splitlines(keepends=True)
    transcript.write_bytes(b"".join(lines[:8]))
    kept, added = 0, 0
    for grown in (lines[8:12], lines[12:]):
        items = list(read_claude_code(transcript, start_offset=kept))
        added += service.import_session_items(AGENT, items, "claude-code", source=str(transcript)).turns_added
        kept = items[-1].offset if items else kept
        with open(transcript, "ab") as out:
            out.write(b"".join(grown))
    items = list(read_claude_code(transcript, start_offset=kept))
    added += service.import_session_items(AGENT, items, "claude-code").turns_added
    assert added == stored(service) == 5

    later = service.import_sessions(AGENT, [transcript])
    assert (later.turns_added, later.turns_skipped) == (0, 5)
    with pytest.raises(InvalidInput) as unknown:
        service.import_session_items(AGENT, [], "chatgpt")
    assert unknown.value.field == "format"
