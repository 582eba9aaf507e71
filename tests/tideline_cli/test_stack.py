"""The stack's embedded Redis (`stack.EmbeddedRedis`): started on the home's socket, stopped leaving nothing."""

from __future__ import annotations

import os
import signal
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
