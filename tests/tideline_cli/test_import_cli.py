"""`tideline import` as real subprocesses on a real database: import, again, bad lines, a killed import resumed."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cli_helpers import tideline
from session_files import write_conversation
from sqlalchemy import select

from tideline_cli.importing import SHOWN_MALFORMED, Progress
from tideline_core.store.database import Database
from tideline_core.store.schema import ContextTurn
from tideline_core.store.status import counts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
CLAUDE_SESSION = "7f3c2a9e-4b1d-4e8a-9c2f-1a2b3c4d5e6f"


def stored(database: Database, agent: str = "alice") -> int:
    with database.read() as conn:
        return counts(conn, agent).context_turns


def summary(files: int, added: tuple[int, int], skipped: tuple[int, int], malformed: int) -> str:
    return (
        f"imported {files} file{'s' if files != 1 else ''}: sessions {added[0]} added, {skipped[0]} already there; "
        f"turns {added[1]} added, {skipped[1]} already there; malformed lines {malformed}"
    )


def conversation(path: Path, turns: int) -> Path:
    """A thousand turns a session, a second apart."""
    return write_conversation(path, turns, session_of=lambda i: f"s{i // 1000}", step=timedelta(seconds=1))


def test_past_sessions_are_imported_and_a_second_import_adds_nothing(env: dict[str, str], database: Database) -> None:
    first = tideline(env, "import", str(FIXTURES))
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [summary(5, (6, 18), (0, 0), 0), "embedding: queued"]
    assert "importing: 100%" in first.stderr  # not a terminal: progress as lines
    assert stored(database) == 18

    again = tideline(env, "import", str(FIXTURES), "--agent", "alice")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [summary(5, (0, 0), (6, 18), 0)]
    assert stored(database) == 18

    with database.read() as conn:
        said = conn.execute(
            select(ContextTurn.role, ContextTurn.content, ContextTurn.created_at)
            .where(ContextTurn.session_id == CLAUDE_SESSION)
            .order_by(ContextTurn.created_at)
        ).all()
    assert len(said) == 5
    assert tuple(said[0]) == (
        "user",
        "Why does the deploy fail on Fridays?",
        datetime(2026, 1, 20, 11, 57, 17, 716000, tzinfo=UTC),
    )


def test_one_format_given_and_another_agent(env: dict[str, str], database: Database) -> None:
    result = tideline(env, "import", str(FIXTURES / "generic.jsonl"), "--format", "jsonl", "--agent", "bob")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == summary(1, (2, 4), (0, 0), 0)
    assert (stored(database, "bob"), stored(database, "alice")) == (4, 0)


def test_malformed_lines_are_reported_as_file_and_line_and_the_rest_is_kept(
    env: dict[str, str], database: Database, tmp_path: Path
) -> None:
    source = conversation(tmp_path / "mixed.jsonl", 5)
    rows = source.read_text().splitlines()
    rows[1] = '{"role": "user", "content": '  # cut short
    rows[3] = json.dumps({"role": "user", "content": "x", "timestamp": "yesterday-ish"})
    source.write_text("\n".join(rows) + "\n")

    result = tideline(env, "import", str(source))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == summary(1, (1, 3), (0, 0), 2)
    errors = [line for line in result.stderr.splitlines() if line.startswith(str(source))]
    assert errors[0].startswith(f"{source}:2: not JSON")
    assert errors[1].startswith(f"{source}:4: timestamp: must be an ISO-8601")
    assert len(errors) == 2
    assert stored(database) == 3


def test_paths_that_cannot_be_imported_exit_2_naming_the_problem_and_store_nothing(
    env: dict[str, str], database: Database, tmp_path: Path
) -> None:
    missing = tideline(env, "import", str(FIXTURES / "generic.jsonl"), str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "PATH:" in missing.stderr and "nope.jsonl does not exist" in missing.stderr
    unknown = tmp_path / "events.jsonl"
    unknown.write_text('{"event": "click"}\n')
    untold = tideline(env, "import", str(unknown))
    assert untold.returncode == 2 and "give --format" in untold.stderr
    assert tideline(env, "import", str(unknown), "--format", "slack").returncode == 2  # argparse: not a choice
    assert stored(database) == 0


def test_an_import_killed_midway_then_run_again_adds_exactly_what_is_missing(
    env: dict[str, str], database: Database, tmp_path: Path
) -> None:
    total = 30_000
    source = conversation(tmp_path / "big.jsonl", total)
    process = subprocess.Popen(
        [sys.executable, "-m", "tideline_cli", "import", str(source)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while stored(database) == 0 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)  # no clean-up of any kind: a crash
    finally:
        process.wait(timeout=30)
    before = stored(database)
    assert 0 < before < total, f"the import was not caught midway ({before} of {total} stored)"
    assert before % 500 == 0  # whole batches only: the batch being written died with the process

    resumed = tideline(env, "import", str(source))
    assert resumed.returncode == 0, resumed.stderr
    added, sessions = total - before, total // 1000
    done_sessions = before // 1000  # sessions whose every turn was in before the kill
    assert resumed.stdout.splitlines()[0] == summary(1, (sessions - done_sessions, added), (done_sessions, before), 0)
    assert stored(database) == total


def test_imported_turns_are_embedded_by_the_ingest_worker_and_found_by_meaning(
    env: dict[str, str], database: Database, celery_worker: Any, wait_until: Any
) -> None:
    result = tideline(env, "import", str(FIXTURES / f"{CLAUDE_SESSION}.jsonl"))
    assert result.returncode == 0, result.stderr

    def embedded() -> bool:
        with database.read() as conn:
            return counts(conn, "alice").pending_context == 0

    wait_until(embedded, timeout=120, message="the worker embedded the imported turns")
    found = tideline(
        env, "search", "database locked by a scheduled job", "--mode", "dense", "--kinds", "context", "--json"
    )
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["degraded"] is None, "the command waits for the model rather than answer by keyword"
    hits = answer["hits"]
    assert hits and hits[0]["session_id"] == CLAUDE_SESSION and "dense" in hits[0]["evidence"]
    assert "locks the database" in hits[0]["text"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_bar_is_redrawn_in_place_and_bad_lines_print_above_it() -> None:
    screen = Terminal()
    progress = Progress(screen)
    progress.progress(512, 2048)
    for n in range(SHOWN_MALFORMED + 3):
        progress.malformed(f"a.jsonl:{n + 1}", "not JSON")
    progress.progress(2048, 2048)
    progress.finish()
    text = screen.getvalue()
    assert text.startswith("\rimporting [#######.......................]  25%  512 B / 2.0 KB")
    assert "\r\x1b[Ka.jsonl:1: not JSON\n" in text  # the bar's line cleared before the first bad line
    assert f"a.jsonl:{SHOWN_MALFORMED}: not JSON" in text and f"a.jsonl:{SHOWN_MALFORMED + 1}:" not in text
    assert (
        "\rimporting [##############################] 100%  2.0 KB / 2.0 KB\n... and 3 more malformed lines\n" in text
    )
