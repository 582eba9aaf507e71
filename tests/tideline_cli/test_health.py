"""`tideline health PART` says healthy only for a part that is up on this host (the healthy cases run in
tests/test_deploy_stack.py, against the real processes)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import redis
from cli_helpers import tideline

from tests.ports import free_port
from workers.beat import SingleBeatScheduler
from workers.liveness import Heartbeat


def test_nothing_listening_is_unhealthy_and_says_where_it_looked(env: dict[str, str]) -> None:
    port = free_port()
    for part in ("mcp", "flower"):
        probed = tideline(env, "health", part, "--port", str(port), "--timeout", "1")
        assert probed.returncode == 1, probed.stderr
        assert probed.stdout.startswith(f"{part}: unhealthy: http://127.0.0.1:{port}/")


def test_a_worker_counts_only_on_this_host_and_for_the_queue_asked(
    env: dict[str, str], redis_client: redis.Redis
) -> None:
    here = socket.gethostname()
    elsewhere = Heartbeat(redis_client, "ingest@another-host", ["ingest"], lambda tag: None, span=30)
    mine = Heartbeat(redis_client, f"dream@{here}", ["dream"], lambda tag: None, span=30)
    elsewhere.start()
    try:
        assert tideline(env, "health", "worker").returncode == 1  # another host's worker is not this one
        mine.start()
        assert tideline(env, "health", "worker", "--queue", "ingest").returncode == 1
        dream = tideline(env, "health", "worker", "--queue", "dream")
        assert dream.returncode == 0 and dream.stdout == f"worker: healthy: dream@{here} beating\n"
    finally:
        mine.stop()
        elsewhere.stop()
    assert tideline(env, "health", "worker").returncode == 1  # a stopped worker withdraws its heartbeat


def test_a_beat_on_this_host_is_healthy_whether_it_holds_the_schedule_or_stands_by(
    env: dict[str, str], celery_app: Any
) -> None:
    assert tideline(env, "health", "beat").returncode == 1
    beat = SingleBeatScheduler(app=celery_app)
    try:
        beat.tick()
        probed = tideline(env, "health", "beat")
    finally:
        beat.close()
    assert probed.returncode == 0 and probed.stdout.endswith(" active\n"), probed.stdout


def test_an_unreachable_broker_is_unhealthy(env: dict[str, str], tmp_path: Path) -> None:
    env["TIDELINE_REDIS_URL"] = f"redis+socket://{tmp_path}/absent.sock"
    probed = tideline(env, "health", "beat", "--timeout", "1")
    assert probed.returncode == 1 and "Redis unreachable" in probed.stdout
