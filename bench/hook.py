"""Latency of the whole `tideline hook` process for UserPromptSubmit and SessionStart, with and without a server.

    OMP_NUM_THREADS=1 .venv/bin/python bench/hook.py [--sizes 10000,100000] [--rounds 40] [--local-rounds 20]

A runtime starts `tideline hook` on every prompt and waits for it; what counts is the process from
spawn to exit. Per size, one agent's store is built as bench/inject.py builds it (bulk SQL:
synthetic bilingual narratives with random unit vectors as embeddings, a tenth as many turns,
profiles, self-concept, threads, snapshots, a SOUL file, topic clusters; not timed), on a throwaway
data dir with its own Redis. Then each prompt call is a new prompt in one session (as a
conversation goes), each session-start call a new session:
  with a server   `tideline serve --http` on the same data dir (the local e5: hybrid search), timed
                  once its searches come from its built indexes (a memory_search no longer says it
                  answered from the full-text index while they build) and after untimed calls; the
                  hook is a thin client posting the event to it;
  without         nothing listens on TIDELINE_HTTP_PORT: each hook process opens the store and
                  answers keyword-only, searching the store's FTS5 index (`search.cold`).
Also timed: the process floor, `tideline hook` given an empty event (Python's start, the thin
client's imports, one log line). Prints p50/p95 beside the targets; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import httpx
from harness import Sandbox, free_port, pct, sandbox, wait
from inject import AGENT, load_average, load_knowledge, load_rows, machine, queries

from tideline_core.compose import compose
from tideline_core.dream.recluster import store as clusters
from tideline_core.service import NullJobQueue
from tideline_core.text.dates import utcnow

TARGET_SERVER_P95 = 150.0  # ms, the whole process, with a server
TARGET_LOCAL_P95 = 1000.0  # ms, the whole process, without one
TIDELINE = str(Path(sys.executable).parent / "tideline")
SESSION = "bench-hook-session"


def build(box: Sandbox, n: int) -> dict[str, Any]:
    settings = box.settings(agent=AGENT, embedder="local")
    service = compose(settings, jobs=NullJobQueue())
    try:
        started = time.perf_counter()
        figures: dict[str, Any] = dict(load_rows(service, n, utcnow()))
        load_knowledge(service)
        figures["topics"] = clusters.rebuild_topics(service.db, AGENT).clusters
        figures["build s"] = time.perf_counter() - started
    finally:
        service.close()
    return figures


def start_event(session: str) -> str:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": None,
            "cwd": "/home/u/project",
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    )


def prompt_event(prompt: str) -> str:
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": None,
            "cwd": "/home/u/project",
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )


def run_hook(env: dict[str, str], stdin: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([TIDELINE, "hook"], input=stdin, env=env, capture_output=True, text=True, timeout=120)
    took = (time.perf_counter() - started) * 1000
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"tideline hook failed ({done.returncode}): {done.stderr[-2000:]}")
    return took, done.stdout


class Series(NamedTuple):
    """Milliseconds per process of each event's calls, and how many answers held a block."""

    prompt: list[float]
    prompt_blocks: int
    start: list[float]
    start_blocks: int


def timed(env: dict[str, str], prompts: list[str], tag: str) -> Series:
    """One prompt call per prompt, then as many session-start calls (each a new session)."""
    prompt, prompt_blocks, start, start_blocks = [], 0, [], 0
    for prompt_text in prompts:
        ms, out = run_hook(env, prompt_event(prompt_text))
        prompt.append(ms)
        prompt_blocks += bool(out)
    for i in range(len(prompts)):
        ms, out = run_hook(env, start_event(f"bench-start-{tag}-{i}"))
        start.append(ms)
        start_blocks += bool(out)
    return Series(prompt, prompt_blocks, start, start_blocks)


def wait_until_searches_are_warm(port: int, timeout: float) -> None:
    """Until the server's memory_search answers from its built indexes (not degraded, as while they build)."""
    from mcp import Client

    async def poll() -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            deadline = time.monotonic() + timeout
            while True:
                result = await client.call_tool("memory_search", {"query": "warm", "mode": "keyword"})
                if (result.structured_content or {}).get("degraded") is None:
                    return
                if time.monotonic() > deadline:
                    raise SystemExit(f"timed out after {timeout:.0f}s waiting for the server's indexes")
                await asyncio.sleep(0.1)

    asyncio.run(poll())


def with_server(box: Sandbox, asked: list[str], warmup: int) -> Series:
    port = free_port()
    env = box.env(TIDELINE_AGENT=AGENT, TIDELINE_HTTP_PORT=str(port), TIDELINE_EMBEDDER="local")
    log = open(box.home / "server.log", "ab")  # noqa: SIM115 - closed when the server stops
    server = subprocess.Popen([TIDELINE, "serve", "--http"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:

        def healthy() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).is_success
            except httpx.HTTPError:
                return False

        wait(healthy, 120, "the server")
        wait_until_searches_are_warm(port, 600)
        for prompt in asked[:warmup]:  # the model loads, the indexes are built, jieba warms
            run_hook(env, prompt_event(prompt))
        return timed(env, asked[warmup:], "server")
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="narratives per store, comma-separated")
    parser.add_argument("--rounds", type=int, default=40, help="timed hook processes per size and event with a server")
    parser.add_argument("--local-rounds", type=int, default=20, help="timed hook processes per size and event without")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls through the server first")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print(f"# tideline hook (UserPromptSubmit, SessionStart), the whole process — {machine()}")
    print(f"  {utcnow():%Y-%m-%d %H:%M} UTC, load average {load_average()}; command {TIDELINE} hook")
    rows = []
    for n in sizes:
        with sandbox(f"hook-{n}") as box:
            figures = build(box, n)
            asked = queries(args.warmup + args.rounds + args.local_rounds + 1)
            floor_env = box.env(TIDELINE_AGENT=AGENT, TIDELINE_HTTP_PORT=str(free_port()))
            floor = [run_hook(floor_env, "")[0] for _ in range(10)]
            served = with_server(box, asked[: args.warmup + args.rounds], args.warmup)
            local_env = box.env(TIDELINE_AGENT=AGENT, TIDELINE_HTTP_PORT=str(free_port()))
            local = timed(local_env, asked[args.warmup + args.rounds :][: args.local_rounds], "local")
            rows.append((n, floor, served, local))
            print(
                f"  {n:>7,} narratives ({figures['turns']:,} turns, built in {figures['build s']:.0f} s): "
                f"prompt p95 server {pct(served.prompt, 95):.0f} / none {pct(local.prompt, 95):.0f} ms; "
                f"session start p95 server {pct(served.start, 95):.0f} / none {pct(local.start, 95):.0f} ms; "
                f"floor p50 {statistics.median(floor):.0f} ms   (load {load_average()})",
                flush=True,
            )
    print("\n## Figures (ms, whole process, p50 / p95)")
    print(f"  {'narratives':>10} {'event':>14} {'with a server':>15} {'without one':>13} {'floor':>6}   blocks")
    for n, floor, served, local in rows:
        for event, on, off, on_blocks, off_blocks in (
            ("prompt", served.prompt, local.prompt, served.prompt_blocks, local.prompt_blocks),
            ("session start", served.start, local.start, served.start_blocks, local.start_blocks),
        ):
            print(
                f"  {n:>10,} {event:>14} {statistics.median(on):6.0f} / {pct(on, 95):5.0f} "
                f"{statistics.median(off):6.0f} / {pct(off, 95):5.0f} {statistics.median(floor):6.0f}   "
                f"server {on_blocks}/{len(on)}, without {off_blocks}/{len(off)}"
            )
    print("\n## Targets")
    for n, _floor, served, local in rows:
        for what, values, target in (
            ("prompt, with a server", served.prompt, TARGET_SERVER_P95),
            ("prompt, without", local.prompt, TARGET_LOCAL_P95),
            ("session start, without", local.start, TARGET_LOCAL_P95),
        ):
            value = pct(values, 95)
            verdict = "met" if value <= target else "NOT met"
            print(f"  {n:>10,} {what:24} p95 ≤ {target:5.0f} ms: {value:7.0f} ms  {verdict}")


if __name__ == "__main__":
    main()
