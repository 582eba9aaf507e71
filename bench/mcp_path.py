"""The path users take: writes and searches over stdio and HTTP with `tideline up` running, beside in-process.

    .venv/bin/python bench/mcp_path.py [--narratives 1000] [--calls 300] [--backlog 3000]

Starts `tideline up` on a throwaway data dir (its own embedded Redis, free ports, the user's model
cache), loads `--narratives` synthetic narratives through the service and waits until the stack's
ingest worker has embedded them. Three clients then take turns call by call, so all three see the
same machine: in-process (`mcp.Client` on a server object in this process), stdio (`tideline serve`
as a subprocess, as an agent runtime starts it) and streamable HTTP (the stack's own server). Each
makes `--calls` writes, `--calls` hybrid searches and `--calls` per-turn blocks (`memory_prefetch`,
one session per transport; every query new, so every search pays its model pass), first with the
stack idle, then with the ingest worker kept busy by a backlog of at least `--backlog` context turns.
Prints p50/p95 per call, the ratio to in-process in the same state, and the resident memory of the
two server processes. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic
from harness import Sandbox, free_port, pct, sandbox, wait
from mcp import Client, StdioServerParameters

from mcp_server.app import create_server
from tideline_core.compose import compose
from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.service import Service
from tideline_core.store.status import counts
from workers.jobqueue import CeleryJobQueue

AGENT = "bench"
# Settings of the stack under test that may be given to this script (e.g. to compare worker priorities).
PASSED_SETTINGS = ("TIDELINE_WORKER_NICE", "TIDELINE_EMBED_THREADS")
WORDS = ("公园", "数据库", "river", "部署", "coffee", "记忆", "release", "朋友", "trust", "调试", "garden", "生日")


@dataclass(frozen=True)
class Figures:
    write_p50: float
    write_p95: float
    search_p50: float
    search_p95: float
    prefetch_p50: float
    prefetch_p95: float


def query(i: int, salt: str) -> str:
    # A new text every call: a repeated query would time the query-vector memo, not the model.
    return f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7 + 3) % len(WORDS)]} {salt}{i}"


@dataclass
class Samples:
    writes: list[float]
    searches: list[float]
    prefetches: list[float]

    def figures(self) -> Figures:
        w, q, p = self.writes, self.searches, self.prefetches
        return Figures(
            statistics.median(w), pct(w, 95), statistics.median(q), pct(q, 95), statistics.median(p), pct(p, 95)
        )


async def timed(client: Client, tool: str, arguments: dict[str, Any], into: list[float]) -> None:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    into.append((time.perf_counter() - started) * 1000)
    assert not result.is_error, result.content


async def drive(clients: dict[str, Client], calls: int, salt: str) -> dict[str, Figures]:
    """`calls` writes and searches on every transport, taking turns call by call (so all see the same machine)."""
    rows = synthetic.narratives(calls + 10, seed=len(salt))
    for name, client in clients.items():  # warm-up: connections, jieba, the server's indexes
        for i in range(10):
            await client.call_tool("memory_write", {"gesture": rows[i]["gesture"], "tags": rows[i]["tags"]})
            await client.call_tool("memory_search", {"query": query(i, f"warm{salt}{name}")})
            await client.call_tool("memory_prefetch", {"query": query(i, f"warmp{salt}{name}")})
    samples = {name: Samples([], [], []) for name in clients}
    names = list(clients)
    for i in range(calls):
        row = rows[10 + i]
        for name in names[i % len(names) :] + names[: i % len(names)]:
            write = {"gesture": row["gesture"], "context": row["context"], "tags": row["tags"]}
            await timed(clients[name], "memory_write", write, samples[name].writes)
            await timed(
                clients[name], "memory_search", {"query": query(i, salt + name), "limit": 10}, samples[name].searches
            )
            # The per-turn block as a runtime asks for it: its own words, one session per transport.
            turn = {"query": query(i, f"turn{salt}{name}"), "session_id": f"{salt}-{name}"}
            await timed(clients[name], "memory_prefetch", turn, samples[name].prefetches)
    return {name: s.figures() for name, s in samples.items()}


def rss_mib(pid: int) -> tuple[float, float, float]:
    """(resident, of it private to the process, peak resident) MiB, from /proc.

    The rest of the resident memory is file pages (libraries, the model file's mapped pages) that
    the kernel may drop or share with other processes."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    kib = {name: int(fields[name].split()[0]) for name in ("VmRSS", "RssAnon", "VmHWM")}
    return kib["VmRSS"] / 1024, kib["RssAnon"] / 1024, kib["VmHWM"] / 1024


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    return (Path(f"/proc/{pid}/cmdline").read_bytes()).replace(b"\0", b" ").decode()


def server_pid(parent: int, marker: str) -> int:
    (pid,) = [p for p in children(parent) if marker in cmdline(p)]
    return pid


class Stack:
    """`tideline up` on the sandbox, and a service of our own on the same data for loading and watching."""

    def __init__(self, box: Sandbox) -> None:
        self.box = box
        self.http_port = free_port()
        passed = {k: v for k, v in os.environ.items() if k in PASSED_SETTINGS}
        env = box.env(TIDELINE_HTTP_PORT=str(self.http_port), TIDELINE_FLOWER_PORT=str(free_port()), **passed)
        env.pop("TIDELINE_REDIS_URL")  # the stack's own embedded Redis, as `make run` has it
        self.env = env
        log = open(box.home / "up.log", "w")  # noqa: SIM115 - lives as long as the stack
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tideline_cli", "up"], env=env, stdout=log, stderr=log, start_new_session=True
        )
        wait(lambda: "Tideline is up." in (box.home / "up.log").read_text(), 120, "tideline up")
        self.settings = box.settings(redis_url=f"redis+socket://{box.home / 'redis.sock'}")
        self.jobs = CeleryJobQueue(self.settings)
        self.service: Service = compose(self.settings, jobs=self.jobs)

    def backlog(self) -> int:
        with self.service.db.read() as conn:
            c = counts(conn, AGENT)
        return c.pending_narratives + c.pending_context

    def load(self, narratives: int) -> None:
        rows = synthetic.narratives(narratives, seed=1)
        for start in range(0, narratives, 200):
            items = [
                NarrativeIn(gesture=r["gesture"], context=r["context"], tags=r["tags"])
                for r in rows[start : start + 200]
            ]
            self.service.write_narratives(AGENT, items)
        wait(lambda: self.backlog() == 0, 600, "the corpus embedded")

    @contextmanager
    def busy(self, backlog: int) -> Iterator[list[int]]:
        """Keep at least `backlog` context turns waiting for the ingest worker; yields how low it ran."""
        stop = threading.Event()
        lowest: list[int] = []
        rows = synthetic.context_turns(backlog, seed=3)
        items = [ContextTurnIn(role=r["role"], content=r["content"], session_id=r["session_id"]) for r in rows]

        def top_up() -> None:
            while not stop.is_set():
                waiting = self.backlog()
                lowest.append(waiting)
                if waiting < backlog:
                    self.service.record_turns(AGENT, items[: backlog - waiting])
                stop.wait(0.5)

        self.service.record_turns(AGENT, items)
        thread = threading.Thread(target=top_up, daemon=True)
        thread.start()
        try:
            yield lowest
        finally:
            stop.set()
            thread.join()

    def stop(self) -> None:
        self.service.close()
        self.jobs.close()
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()


Run = tuple[dict[str, Figures], dict[str, tuple[float, float, float]]]


async def measure(stack: Stack, calls: int, backlog: int) -> tuple[dict[str, Run], int]:
    """Idle, then busy: the three transports side by side, each server living through both; and the
    resident memory of the two server processes after each state."""
    stdio = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tideline_cli", "serve"],
        env={**stack.env, "TIDELINE_AGENT": AGENT, "TIDELINE_LOG_LEVEL": "WARNING"},
    )
    runs: dict[str, Run] = {}
    async with (
        Client(create_server(stack.settings, jobs=stack.jobs)) as local,
        Client(stdio, mode="legacy", read_timeout_seconds=60) as piped,
        Client(f"http://127.0.0.1:{stack.http_port}/mcp") as remote,
    ):
        clients = {"in-process": local, "stdio": piped, "http": remote}

        def memory() -> dict[str, tuple[float, float, float]]:
            return {
                "stdio": rss_mib(server_pid(os.getpid(), "serve")),
                "http": rss_mib(server_pid(stack.process.pid, "serve --http")),
            }

        runs["idle"] = (await drive(clients, calls, "idle"), memory())
        with stack.busy(backlog) as lowest:
            runs["busy"] = (await drive(clients, calls, "busy"), memory())
    return runs, min(lowest or [0])


def main() -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--narratives", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--backlog", type=int, default=3000, help="context turns queued to keep the worker busy")
    args = parser.parse_args()
    with sandbox("path-bench") as box:
        stack = Stack(box)
        try:
            stack.load(args.narratives)
            wait(lambda: stack.backlog() == 0, 600, "the stack idle")
            runs, lowest = asyncio.run(measure(stack, args.calls, args.backlog))
            report(runs, lowest, args)
        finally:
            stack.stop()


def report(runs: dict[str, Any], lowest_backlog: int, args: argparse.Namespace) -> None:
    print(f"cpus={os.cpu_count()} narratives={args.narratives} calls={args.calls} per transport and state")
    print(f"busy: the ingest worker had at least {lowest_backlog} context turns waiting throughout")
    print(
        f"{'state':<5} {'transport':<10} {'write p50':>9} {'p95':>6} {'search p50':>10} {'p95':>6}"
        f" {'prefetch p50':>12} {'p95':>6} {'÷ in-process (write / search / prefetch p50)':>45}"
        f" {'server RSS / anon / peak MiB':>29}"
    )
    for state, (figures, memory) in runs.items():
        base = figures["in-process"]
        for transport, f in figures.items():
            ratio = (
                f"{f.write_p50 / base.write_p50:.2f} / {f.search_p50 / base.search_p50:.2f}"
                f" / {f.prefetch_p50 / base.prefetch_p50:.2f}"
            )
            rss = "{:.0f} / {:.0f} / {:.0f}".format(*memory[transport]) if transport in memory else "-"
            print(
                f"{state:<5} {transport:<10} {f.write_p50:>9.2f} {f.write_p95:>6.2f} {f.search_p50:>10.2f}"
                f" {f.search_p95:>6.2f} {f.prefetch_p50:>12.2f} {f.prefetch_p95:>6.2f} {ratio:>45} {rss:>29}"
            )


if __name__ == "__main__":
    main()
