"""The stack's embedded Redis (`stack.EmbeddedRedis`): started on the home's socket, restarted when it dies, stopped
leaving nothing."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tideline_cli import stack
from tideline_core.settings import Settings


def test_stopping_the_embedded_redis_leaves_no_folder_of_its_own_behind(short_home: Path) -> None:
    embedded = stack.EmbeddedRedis(Settings(home=short_home))
    own = Path(embedded.server.redis_dir)
    assert embedded.answers() and own.is_dir()
    embedded.stop()
    assert not embedded.answers()
    assert not own.exists()


def test_a_redis_restarted_after_it_died_leaves_no_folder_of_the_dead_one_behind(short_home: Path) -> None:
    embedded = stack.EmbeddedRedis(Settings(home=short_home))
    dead = Path(embedded.server.redis_dir)
    try:
        os.kill(embedded.server.pid, signal.SIGKILL)
        assert embedded.keep_alive() is not None  # what happened, for the log
        assert embedded.answers()
        assert not dead.exists()
    finally:
        embedded.stop()


def test_a_restart_waits_for_the_new_redis_socket_not_the_one_the_dead_server_left(short_home: Path) -> None:
    embedded = stack.EmbeddedRedis(Settings(home=short_home))
    sock = short_home / "redis.sock"
    start = embedded._start
    left_over: list[bool] = []

    def start_noting_the_socket() -> object:
        left_over.append(sock.exists())
        return start()

    embedded._start = start_noting_the_socket  # type: ignore[method-assign]
    try:
        os.kill(embedded.server.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while embedded.answers() and time.monotonic() < deadline:  # until the kill takes effect
            time.sleep(0.05)
        assert sock.exists()  # what a killed redis-server leaves
        assert embedded.keep_alive() is not None
        assert left_over == [False]
        assert embedded.answers()
    finally:
        embedded.stop()
