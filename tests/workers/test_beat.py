"""One beat schedules at a time: a second `tideline beat` stands by, and takes over when the first stops or dies."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from worker_processes import kill, stop

from tideline_core.settings import Settings
from workers.beat import LAST_RUN_KEY, SingleBeatScheduler, running_beats, schedule_holder

LOCK_SECONDS = 3
SENT = "Sending due task reconcile-pending-embeddings"


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(embedder="none")


@pytest.fixture
def beats(settings: Settings, database: Any, tmp_path: Path) -> Iterator[Callable[[str], subprocess.Popen[bytes]]]:
    """Starts `tideline beat` processes (a 3 s lock, the reconciler every second); stops them all afterwards."""
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "TIDELINE_HOME": str(settings.home),
            "TIDELINE_REDIS_URL": settings.resolved_redis_url,
            "TIDELINE_DATABASE_URL": settings.resolved_database_url,
            "TIDELINE_EMBEDDER": "none",
            "TIDELINE_BEAT_LOCK_SECONDS": str(LOCK_SECONDS),
            "TIDELINE_RECONCILE_INTERVAL_SECONDS": "1",
            "TIDELINE_LOG_LEVEL": "INFO",
        }
        with open(tmp_path / f"{name}.log", "ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "tideline_cli", "beat"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append(process)
        return process

    yield start
    for process in started:
        stop(process)


def node(process: subprocess.Popen[bytes]) -> str:
    return f"{socket.gethostname()}#{process.pid}"


def sent(tmp_path: Path, name: str) -> int:
    return (tmp_path / f"{name}.log").read_text(errors="replace").count(SENT)


def holding_beat(
    beats: Callable[[str], subprocess.Popen[bytes]], redis_client: redis.Redis, tmp_path: Path, wait_until: Any
) -> subprocess.Popen[bytes]:
    """A beat named "first", once it holds the schedule."""
    first = beats("first")
    wait_until(
        lambda: schedule_holder(redis_client) == node(first),
        timeout=60,
        message=f"the first beat to hold (log: {tmp_path})",
    )
    return first


def test_a_second_beat_sends_nothing_while_the_first_holds_the_schedule_and_takes_over_when_it_is_killed(
    beats: Callable[[str], subprocess.Popen[bytes]], redis_client: redis.Redis, tmp_path: Path, wait_until: Any
) -> None:
    first = holding_beat(beats, redis_client, tmp_path, wait_until)
    second = beats("second")
    standby = [(node(second), "standby")]
    wait_until(
        lambda: [(b.node, b.role) for b in running_beats(redis_client) if b.node == node(second)] == standby,
        timeout=60,
        message=f"the second beat to stand by (log: {tmp_path})",
    )
    before = sent(tmp_path, "first")
    wait_until(lambda: sent(tmp_path, "first") >= before + 3, timeout=15, message="the first beat to keep sending")
    assert sent(tmp_path, "second") == 0
    assert (
        "holds the schedule; " in (tmp_path / "second.log").read_text()
        and "stands by" in (tmp_path / "second.log").read_text()
    )

    kill(first)  # kill -9: its lock is never released, only lapses
    killed_at = time.monotonic()
    wait_until(
        lambda: schedule_holder(redis_client) == node(second), timeout=15, message="the second beat to take over"
    )
    # The lock lapses after its span; the second tries every third of one.
    assert time.monotonic() - killed_at <= LOCK_SECONDS + LOCK_SECONDS / 3 + 2
    wait_until(lambda: sent(tmp_path, "second") >= 1, timeout=10, message="the second beat to send")
    assert sent(tmp_path, "first") <= before + 3 + LOCK_SECONDS + 1  # nothing from the dead one after it died


def test_a_beat_stopped_gracefully_frees_the_schedule_at_once(
    beats: Callable[[str], subprocess.Popen[bytes]], redis_client: redis.Redis, tmp_path: Path, wait_until: Any
) -> None:
    first = holding_beat(beats, redis_client, tmp_path, wait_until)
    second = beats("second")
    wait_until(lambda: len(running_beats(redis_client)) == 2, timeout=60, message="both beats to announce themselves")
    stop(first)  # SIGTERM
    assert schedule_holder(redis_client) in (None, node(second))  # released, not left to lapse
    assert node(first) not in {b.node for b in running_beats(redis_client)}
    wait_until(
        lambda: schedule_holder(redis_client) == node(second), timeout=10, message="the second beat to take over"
    )


def stored_at(client: redis.Redis, entry: str) -> datetime:
    """When the beats' shared record says `entry` last ran."""
    raw = client.hget(LAST_RUN_KEY, entry)
    assert isinstance(raw, bytes), raw
    return datetime.fromisoformat(raw.decode())


def last_nightly_due() -> datetime:
    """The latest 03:00 UTC already past (the test settings' TIDELINE_DREAM_AT and zone)."""
    now = datetime.now(UTC)
    today = now.replace(hour=3, minute=0, second=0, microsecond=0)
    return today if now >= today else today - timedelta(days=1)


def test_a_beat_that_takes_over_neither_repeats_what_another_beat_sent_nor_counts_the_unsent_as_overdue(
    celery_app: Any, redis_client: redis.Redis
) -> None:
    redis_client.hset(LAST_RUN_KEY, "nightly-dream", last_nightly_due().isoformat())
    scheduler = SingleBeatScheduler(app=celery_app)
    try:
        scheduler.tick()
        assert scheduler.holding
        entries = scheduler.schedule
        assert entries["nightly-dream"].last_run_at == last_nightly_due()  # tonight's dream was sent: not again
        # Never sent by any beat: counts from now, so a beat that stood by for days sends nothing overdue.
        assert (datetime.now(UTC) - entries["reconcile-pending-embeddings"].last_run_at).total_seconds() < 5
        assert redis_client.llen("dream") == 0
        advanced = scheduler.reserve(entries["reconcile-pending-embeddings"])
        assert stored_at(redis_client, "reconcile-pending-embeddings") == advanced.last_run_at
    finally:
        scheduler.close()
    assert schedule_holder(redis_client) is None


def test_a_beat_that_takes_over_after_a_missed_nightly_dream_sends_it(
    celery_app: Any, redis_client: redis.Redis
) -> None:
    # The beat that held the schedule sent the dream the night before, then died before this night's.
    redis_client.hset(LAST_RUN_KEY, "nightly-dream", (last_nightly_due() - timedelta(days=1)).isoformat())
    scheduler = SingleBeatScheduler(app=celery_app)
    try:
        scheduler.tick()
    finally:
        scheduler.close()
    assert redis_client.llen("dream") == 1
    assert stored_at(redis_client, "nightly-dream") > last_nightly_due()
