"""`tideline up` as a test's background process: started, waited for until it says it is up, stopped with Ctrl-C."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

READY = "Press Ctrl-C to stop."


@contextmanager
def tideline_up(env: dict[str, str], timeout: float = 90) -> Iterator[list[str]]:
    """The stack up on `env`; yields its output so far (the banner). Fails the test if it does not come up."""
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "tideline_cli", "up"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def drain() -> None:  # to the end: a full pipe would stall the supervisor
        for line in supervisor.stdout or ():
            lines.put(line)

    threading.Thread(target=drain, daemon=True).start()
    output: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while not any(READY in line for line in output):
            if time.monotonic() > deadline or supervisor.poll() is not None:
                pytest.fail("tideline up did not come up:\n" + "".join(output))
            try:
                output.append(lines.get(timeout=1))
            except queue.Empty:
                continue
        yield output
    finally:
        supervisor.send_signal(signal.SIGINT)
        try:
            supervisor.wait(timeout=40)
        except subprocess.TimeoutExpired:
            supervisor.kill()
