"""`tideline up` stops its parts warm first (SIGTERM to each part), then cold (SIGQUIT), then kills what is left."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tideline_cli import stack
from tideline_cli.stack import Child, Supervisor

# A part that records each signal it gets; `finish_on` says which one makes it exit.
RECORDER = """
import os, signal, sys, time
log = open(sys.argv[1], "a", buffering=1)
def on(signum, _frame):
    log.write(signal.Signals(signum).name + "\\n")
    if signal.Signals(signum).name == sys.argv[2]:
        sys.exit(0)
signal.signal(signal.SIGTERM, on)
signal.signal(signal.SIGQUIT, on)
if os.fork() == 0:  # a pool process of its own, in the part's group
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    time.sleep(60)
    os._exit(0)
log.write("ready\\n")
while True:
    time.sleep(0.05)
"""


def part(tmp_path: Path, name: str, finish_on: str) -> tuple[Child, Path]:
    signals = tmp_path / f"{name}.signals"
    return Child(name, [sys.executable, "-c", RECORDER, str(signals), finish_on], tmp_path / f"{name}.log"), signals


def test_a_part_that_finishes_its_work_on_sigterm_is_never_sent_sigquit_and_one_that_does_not_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack, "WARM_STOP_SECONDS", 2.0)
    monkeypatch.setattr(stack, "COLD_STOP_SECONDS", 2.0)
    quick, quick_signals = part(tmp_path, "quick", finish_on="SIGTERM")
    slow, slow_signals = part(tmp_path, "slow", finish_on="SIGQUIT")
    said: list[str] = []
    supervisor = Supervisor([quick, slow], said.append)
    supervisor.start_all(dict(os.environ))
    deadline = time.monotonic() + 30
    while not all(p.exists() and "ready" in p.read_text() for p in (quick_signals, slow_signals)):
        assert time.monotonic() < deadline, "the parts never started"
        time.sleep(0.05)
    supervisor.stop_all()
    assert quick_signals.read_text().split() == ["ready", "SIGTERM"]
    assert slow_signals.read_text().split() == ["ready", "SIGTERM", "SIGQUIT"]
    assert said == ["slow still running after 2s; cold shutdown (SIGQUIT)"]
    # Each part's own pool process went with it.
    assert not quick.group_alive() and not slow.group_alive()
