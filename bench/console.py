"""Server time of the console's pages over large stores: each page as a browser asks for it, p50 and p95.

    OMP_NUM_THREADS=1 .venv/bin/python bench/console.py [--sizes 10000,100000] [--rounds 30] [--local-model]

Per size: the store of bench/inject.py (N synthetic bilingual narratives with tags, FTS rows and
vectors, N/10 turns in sessions, every third narrative linked to a turn; bulk SQL, not timed), its
real topic clusters, and a hundred memories amended. Then the console app over that service, asked
in-process through Starlette's test client (the ASGI app, its templates and the service; no
network): the first page of memories, a page deep in the listing (its cursor), filters by tag,
entity, origin and weight, the heaviest first, a keyword search and a hybrid one (with
`--local-model` the search is hybrid through the local e5, its model pass in the figure), one memory
with its source turns and neighbours, the sessions, one session, the dream log, the review inbox,
the injection preview for a query, the map and the pipeline. Each timed `--rounds` times after
`--warmup` untimed; prints p50/p95 per page and size beside the target (p95 ≤ 150 ms at 100k);
asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from harness import pct
from inject import AGENT, load_average, load_rows, machine
from starlette.testclient import TestClient

from tideline_console.app import create_app
from tideline_core.compose import compose
from tideline_core.domain.inputs import AmendmentIn
from tideline_core.dream.recluster import store as clusters
from tideline_core.service import MemoryFilter, NullJobQueue
from tideline_core.settings import Settings
from tideline_core.text.dates import utcnow

TARGET_P95 = 150.0  # ms, every page at 100k narratives
DEEP_PAGES = 100  # the listing page timed as "deep": this many pages of 50 in


def pages(service: Any) -> dict[str, str]:
    """Each page timed, by name → its path (what a browser would ask for)."""
    page = service.memories_page(AGENT, MemoryFilter())
    cursor = page.next_after
    for _ in range(DEEP_PAGES - 1):
        if cursor is None:
            break
        cursor = service.memories_page(AGENT, MemoryFilter(after=cursor)).next_after
    linked = (
        next(m.id for m in page.items if m.source_links)
        if any(m.source_links for m in page.items)
        else page.items[0].id
    )
    session = service.sessions(AGENT, limit=1)[0].session_id
    q = f"agent={AGENT}"
    paths = {
        "memories": f"/memories?{q}",
        f"memories page {DEEP_PAGES}": f"/memories?{q}&after={quote(cursor)}" if cursor else f"/memories?{q}",
        "memories tag": f"/memories?{q}&tag=工作",
        "memories entity": f"/memories?{q}&entity=小明",
        "memories origin+weight": f"/memories?{q}&origin=agent&min_weight=0.7",
        "memories heaviest": f"/memories?{q}&order=weight",
        "search keyword": f"/memories?{q}&q=记忆系统&mode=keyword",
        "search hybrid": f"/memories?{q}&q=memory retrieval cache&mode=hybrid",
        "one memory": f"/memories/{linked}?{q}",
        "conversations": f"/conversations?{q}",
        "one conversation": f"/conversations/{session}?{q}",
        "dream log": f"/dream?{q}",
        "review inbox": f"/review?{q}",
        "injection preview": f"/inject?{q}&query=今天的会议计划",
        "map": f"/map?{q}",
        "pipeline": f"/pipeline?{q}",
    }
    return paths


def run_size(root: Path, n: int, rounds: int, warmup: int, local_model: bool) -> dict[str, Any]:
    home = root / f"console-{n}"
    home.mkdir(parents=True)
    settings = Settings(
        home=home,
        database_url=f"sqlite:///{home / 'memory.db'}",
        agent=AGENT,
        embedder="local" if local_model else "none",
        model_cache=Settings().model_cache,
        redis_url="redis://127.0.0.1:1/0",  # nothing listens: the pipeline page says so, quickly
    )
    service = compose(settings, jobs=NullJobQueue())
    out: dict[str, Any] = {}
    try:
        started = time.perf_counter()
        out.update(load_rows(service, n, utcnow()))
        clusters.rebuild_topics(service.db, AGENT)
        for narrative_id in range(1, n, max(1, n // 100)):
            service.amend(AGENT, AmendmentIn(narrative_id=narrative_id, note=f"补充：第{narrative_id}条的更正"))
        out["load s"] = time.perf_counter() - started
        if local_model:
            service.embedder.queries(["model load"], timeout=300)
        paths = pages(service)
        with TestClient(create_app(settings, service=service), base_url="http://127.0.0.1:8766") as client:
            for name, path in paths.items():
                for _ in range(warmup):
                    assert client.get(path).status_code == 200, (name, path)
                times = []
                for _ in range(rounds):
                    started = time.perf_counter()
                    response = client.get(path)
                    times.append((time.perf_counter() - started) * 1000)
                    assert response.status_code == 200, (name, path, response.text[:300])
                out[name] = (statistics.median(times), pct(times, 95))
    finally:
        service.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="narratives per store, comma-separated")
    parser.add_argument("--rounds", type=int, default=30, help="timed requests of each page per size")
    parser.add_argument("--warmup", type=int, default=3, help="untimed requests of each page before the timed ones")
    parser.add_argument("--local-model", action="store_true", help="search through the local e5 (hybrid)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    root = Path(tempfile.mkdtemp(prefix="tl-console-bench-"))
    print(f"# Tideline console benchmark — {machine()}")
    print(f"  {utcnow():%Y-%m-%d %H:%M} UTC, load average {load_average()} (1, 5, 15 min)")
    search = "hybrid through the local e5" if args.local_model else "keyword only (no embedder; --local-model for e5)"
    print(f"  {args.rounds} timed requests per page and size after {args.warmup} untimed; SQLite; search {search}")
    results: dict[int, dict[str, Any]] = {}
    try:
        for n in sizes:
            results[n] = run_size(root, n, args.rounds, args.warmup, args.local_model)
            print(f"  built and timed {n:,} narratives (store load {results[n]['load s']:.1f} s)", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    names = [k for k in results[sizes[0]] if isinstance(results[sizes[0]][k], tuple)]
    print(f"\n## Page server time (ms), p50 / p95; target p95 ≤ {TARGET_P95:.0f} ms at 100,000 narratives")
    print(f"  {'page':24} " + " ".join(f"{f'{n:,}':>17}" for n in sizes))
    for name in names:
        cells = " ".join(f"{results[n][name][0]:8.1f} /{results[n][name][1]:7.1f}" for n in sizes)
        print(f"  {name:24} {cells}")
    largest = max(sizes)
    worst = max(names, key=lambda name: results[largest][name][1])
    value = results[largest][worst][1]
    verdict = (
        "(the target is for 100,000; not judged)" if largest < 100_000 else "met" if value <= TARGET_P95 else "NOT met"
    )
    print(f"\n  slowest page at {largest:,}: {worst}, p95 {value:.1f} ms {verdict}")


if __name__ == "__main__":
    main()
