"""Import throughput: a generated Claude Code transcript imported into a throwaway store, then imported again.

    .venv/bin/python bench/import_sessions.py [--turns 200000] [--sessions 20] [--batch 500] [--tool-lines 1]

The file interleaves what was said with the lines an import passes over (tool calls, tool results
of ~2 KB, bookkeeping), `--tool-lines` of each per said turn, as a coding session's transcript
does. Prints the file's size, turns/s and MB/s for the first import (every turn new) and the second
(every turn already there, so only reading, hashing and the key lookups), and the peak memory.
Runs keyword-only with no job queue; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tideline_core.compose import compose
from tideline_core.embedding import NoEmbedder
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings

WORDS = (
    "deploy backup cron database migrate lock schedule Sunday Friday release rollback latency test "
    "部署 备份 数据库 迁移 周五 周日 发布 回滚 延迟 测试 服务器 告警 配置"
).split()


def generate(path: Path, turns: int, sessions: int, tool_lines: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    start = datetime(2025, 6, 1, tzinfo=UTC)
    blob = "x" * 2000
    with open(path, "w", encoding="utf-8") as out:
        for i in range(turns):
            session = f"session-{i * sessions // turns:04d}"
            at = start + timedelta(seconds=7 * i)
            role = "user" if i % 2 == 0 else "assistant"
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60)))
            line = {
                "type": role,
                "sessionId": session,
                "uuid": f"u-{i}",
                "timestamp": at.isoformat().replace("+00:00", "Z"),
                "message": {"role": role, "content": [{"type": "text", "text": text}]},
            }
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            for j in range(tool_lines):
                tool = {
                    "type": "user",
                    "sessionId": session,
                    "uuid": f"t-{i}-{j}",
                    "timestamp": at.isoformat().replace("+00:00", "Z"),
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t", "content": blob}],
                    },
                }
                out.write(json.dumps(tool) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200_000)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--tool-lines", type=int, default=1)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="tideline-import-bench-"))
    try:
        source = home / "transcript.jsonl"
        generate(source, args.turns, args.sessions, args.tool_lines)
        megabytes = source.stat().st_size / 1e6
        print(f"file: {megabytes:.1f} MB, {args.turns} said turns, {args.turns * args.tool_lines} tool lines")
        settings = Settings(home=home, embedder="none", database_url=f"sqlite:///{home / 'memory.db'}")
        service = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder())
        try:
            for label in ("first import", "again"):
                began = time.perf_counter()
                report = service.import_sessions("bench", [source], batch_size=args.batch)
                took = time.perf_counter() - began
                print(
                    f"{label:>12}: {took:6.1f} s  {args.turns / took:8.0f} turns/s  {megabytes / took:6.1f} MB/s  "
                    f"(added {report.turns_added}, already there {report.turns_skipped})"
                )
        finally:
            service.close()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak memory: {peak:.0f} MB")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
