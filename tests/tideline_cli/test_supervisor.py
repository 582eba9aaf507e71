"""The supervisor's rule: when one part dies, everything stops — process groups included."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tideline_cli.stack import Child, Supervisor


def test_when_one_part_dies_the_supervisor_reports_it_and_stops_the_others(tmp_path: Path) -> None:
    # The "worker" forks a grandchild, like a prefork pool; both must be gone afterwards.
    sleeper = Child(
        "worker",
        [sys.executable, "-c", "import os, time\nif os.fork() == 0: time.sleep(60)\ntime.sleep(60)"],
        tmp_path / "worker.log",
    )
    crasher = Child("mcp", [sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], tmp_path / "mcp.log")
    said: list[str] = []
    supervisor = Supervisor([sleeper, crasher], said.append)
    supervisor.start_all(dict(os.environ))
    dead = supervisor.watch()
    assert dead is crasher and crasher.exited() == 3 and "boom" in crasher.log_tail()
    supervisor.stop_all()
    assert not sleeper.group_alive() and sleeper.exited() is not None
