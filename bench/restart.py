"""A restart at 100k: the first per-turn block and search of a fresh process, while and after its indexes are built.

    OMP_NUM_THREADS=1 .venv/bin/python bench/restart.py [--store DIR] [--size 100000] [--rounds 20] [--every 1]
        [--serve 5]

The store (kept in --store DIR for the next run, else a throwaway one): one agent with --size
synthetic narratives and a tenth as many turns, built by bulk SQL by bench/inject.py's loaders (not
timed). Each phase below is a fresh process on that store, as a server after a restart is; the model
is loaded before any figure (it loads beside the indexes on a server's warm-up thread too):

  before  warming off (`compose(..., warming=False)`): the first per-turn block builds the agent's
          in-memory indexes; then --rounds questions' hybrid rankings, kept to compare with
  after   warming on (`compose(..., warming=True)`, `Service.warm_up`): the first per-turn block
          and the first hybrid search, answered from the store's full-text index while the build
          runs on a thread of its own; a per-turn block and a hybrid search every --every seconds (an
          agent's turns come seconds apart; 0: back to back, the build's worst case) until the build
          is done (p50 / p95); the time until warm; the first warm search; then
          the same --rounds questions, their rankings compared with the ones of `before`
  serve   `tideline serve` on that store: initialize and tools/list answered (bench/startup.py's
          measure), --serve runs

Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from harness import pct
from inject import AGENT, load_average, load_knowledge, load_rows, machine, queries

from tideline_core.compose import compose
from tideline_core.domain.inputs import PrefetchIn, SearchIn
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings
from tideline_core.text.dates import utcnow

BUILT = "restart-store.json"  # beside the database: the size it was built with
FIRST_BLOCK_TARGET_S = 1.0
SERVE_TARGET_S = 5.0


def settings_for(store: Path) -> Settings:
    return Settings(
        home=store,
        database_url=f"sqlite:///{store / 'memory.db'}",
        agent=AGENT,
        embedder="local",
        model_cache=Settings().model_cache,
    )


def build(store: Path, size: int) -> None:
    """The store of `size` narratives by bulk SQL (bench/inject.py's loaders), unless it is there already."""
    marker = store / BUILT
    if marker.exists() and json.loads(marker.read_text())["size"] == size:
        return
    if (store / "memory.db").exists():
        raise SystemExit(f"{store} holds a store of another size: give another --store")
    store.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    service = compose(settings_for(store), jobs=NullJobQueue(), llm=None)
    try:
        shape = load_rows(service, size, utcnow())
        load_knowledge(service)
    finally:
        service.close()
    marker.write_text(json.dumps({"size": size, **shape}))
    print(f"  built {size:,} narratives, {shape['turns']:,} turns in {time.perf_counter() - started:.0f} s: {store}")


def ms(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def ranking(service: Service, question: str) -> list[list[Any]]:
    outcome = service.searcher.search(AGENT, SearchIn(query=question, limit=10))
    return [[h.kind, h.id, round(h.score, 9)] for h in outcome.hits]


def phase(store: Path, warming: bool, rounds: int, every: float) -> dict[str, Any]:
    """One fresh process's figures (see the module docstring); run as `--phase before|after`."""
    service = compose(settings_for(store), jobs=NullJobQueue(), llm=None, warming=warming)
    out: dict[str, Any] = {}
    asked = iter(queries(10_000))
    # Sessions of this run's own: a block reads what its session was shown, which a kept store would pile up.
    session = f"restart-{os.getpid()}-{time.time_ns()}"
    compared = [f"{q}?" for q in queries(rounds)]  # questions of their own, asked alike in both phases
    try:
        started = time.perf_counter()
        build = service.warm_up(AGENT) if warming else None
        service.embedder.queries(["model load"], timeout=300)  # the model loads once, not in a figure
        out["model s"] = time.perf_counter() - started
        out["first block ms"] = ms(
            lambda: service.prefetch(AGENT, PrefetchIn(query=next(asked), session_id=f"{session}-first"))
        )
        if build is not None:
            first = service.search(AGENT, SearchIn(query=next(asked)), source=None)
            out["first search degraded"] = first.degraded
            out["first search ms"] = ms(lambda: service.search(AGENT, SearchIn(query=next(asked)), source=None))
            blocks: list[float] = []
            searches: list[float] = []
            while not build.wait(0):
                blocks.append(ms(lambda: service.prefetch(AGENT, PrefetchIn(query=next(asked), session_id=session))))
                searches.append(ms(lambda: service.search(AGENT, SearchIn(query=next(asked)), source=None)))
                build.wait(every)  # the next turn, unless the build is done first
            build.wait()
            out["warm s"] = build.took
            out["build error"] = build.error
            out["while blocks ms"] = blocks
            out["while searches ms"] = searches
            out["first warm search ms"] = ms(lambda: service.search(AGENT, SearchIn(query=next(asked)), source=None))
            warm = [ms(lambda: service.search(AGENT, SearchIn(query=next(asked)), source=None)) for _ in range(20)]
            out["warm search p50 ms"] = statistics.median(warm)
        out["rankings"] = [ranking(service, question) for question in compared]
    finally:
        service.close()
    return out


def run_phase(store: Path, name: str, rounds: int, every: float) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        command = [sys.executable, __file__, "--store", str(store), "--phase", name, "--every", str(every)]
        subprocess.run([*command, "--rounds", str(rounds), "--out", result.name], check=True)
        return dict(json.loads(Path(result.name).read_text()))


def serve_seconds(store: Path, runs: int) -> list[float]:
    from startup import serve_to_tools_list

    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    env.update(
        TIDELINE_HOME=str(store),
        TIDELINE_DATABASE_URL=f"sqlite:///{store / 'memory.db'}",
        TIDELINE_AGENT=AGENT,
        TIDELINE_MODEL_CACHE=str(Settings().model_cache),
        TIDELINE_REDIS_URL="redis://127.0.0.1:9/0",  # nothing listens: a restart's queue is not measured
    )
    return [serve_to_tools_list(env) for _ in range(runs)]


def p50_p95(values: list[float]) -> str:
    if not values:
        return "none (the build finished first)"
    return f"p50 {statistics.median(values):.0f} / p95 {pct(values, 95):.0f} ms ({len(values)} calls)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, help="where the store is kept (built there if absent)")
    parser.add_argument("--size", type=int, default=100_000, help="narratives in the store")
    parser.add_argument("--rounds", type=int, default=20, help="questions whose rankings are compared")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between calls while the build runs")
    parser.add_argument("--serve", type=int, default=5, help="runs of `tideline serve` to its tools list")
    parser.add_argument("--phase", choices=("before", "after"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        args.out.write_text(json.dumps(phase(args.store, args.phase == "after", args.rounds, args.every)))
        return
    store = args.store or Path(tempfile.mkdtemp(prefix="tl-restart-bench-"))
    print(f"# Tideline restart benchmark — {machine()}")
    print(f"  {utcnow():%Y-%m-%d %H:%M} UTC, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    build(store, args.size)
    shape = json.loads((store / BUILT).read_text())
    print(f"  store: {args.size:,} narratives, {shape['turns']:,} turns, one agent, SQLite ({store})")
    print(f"  load average before: {load_average()} (1, 5, 15 min)")
    before = run_phase(store, "before", args.rounds, args.every)
    after = run_phase(store, "after", args.rounds, args.every)
    equal = sum(1 for a, b in zip(before["rankings"], after["rankings"], strict=True) if a == b)
    block_s = after["first block ms"] / 1000
    print("\n## The first per-turn block after a restart")
    print(f"  before (warming off: the call builds the indexes): {before['first block ms']:,.0f} ms")
    verdict = "met" if block_s <= FIRST_BLOCK_TARGET_S else "NOT met"
    print(f"  after  (answered from the full-text index):       {after['first block ms']:,.0f} ms  ≤ 1 s {verdict}")
    print(f"  first hybrid search (after): {after['first search ms']:,.0f} ms; note: {after['first search degraded']}")
    print(f"\n## While the indexes are built (a per-turn block and a hybrid search every {args.every:g} s)")
    print(f"  per-turn blocks: {p50_p95(after['while blocks ms'])}")
    print(f"  hybrid searches: {p50_p95(after['while searches ms'])}")
    print(
        f"  warm after {after['warm s']:.1f} s (from warm_up; the model loaded beside it in {after['model s']:.1f} s)"
    )
    if after["build error"]:
        print(f"  the build failed: {after['build error']}")
    first_warm, warm_p50 = after["first warm search ms"], after["warm search p50 ms"]
    print(f"  first warm hybrid search {first_warm:.0f} ms, then p50 {warm_p50:.0f} ms")
    print(f"\n## Rankings once warm equal to warming off: {equal}/{len(before['rankings'])} questions (top 10)")
    if args.serve:
        serves = serve_seconds(store, args.serve)
        verdict = "met" if max(serves) <= SERVE_TARGET_S else "NOT met"
        print(
            f"\n## `tideline serve` to its tools list on this store: median {statistics.median(serves):.2f} s, "
            f"max {max(serves):.2f} s ({len(serves)} runs)  ≤ {SERVE_TARGET_S:.0f} s {verdict}"
        )
    print(f"\n  load average after: {load_average()} (1, 5, 15 min)")


if __name__ == "__main__":
    main()
