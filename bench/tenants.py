"""Many agents on one PostgreSQL: search, per-turn block, CPU and vector recall per agent size class, beside SQLite.

    .venv/bin/python bench/tenants.py [--mix 8x100000,40x10000,952x1000] [--database-url URL] [--queries 60]
        [--sample 3] [--layout agent|shared] [--ef-search 400] [--sqlite 1000,10000] [--starts 3] [--keep]
        [--existing URL]

One database holds every agent of `--mix` (COUNTxNARRATIVES, comma-separated; each agent also has a
tenth as many context turns), loaded with COPY as `bench/scale.py` loads one agent: synthetic bilingual
rows (`bench/synthetic.py`, a seed per agent), their keyword columns and statistics, and vectors made
from the real e5 vectors of their words. The indexes are then those of `--layout`:

- ``agent`` (what the store makes): a vector graph and a GIN keyword index of its own for each agent's
  view of at least `agent_indexes.OWN_ROWS` rows; below, the agent's rows read through its b-trees;
- ``shared`` (before): one HNSW graph per vector view and one GIN index per keyword column, each over
  every agent's rows (a walk filtered to the agent by pgvector's iterative scan).

For `--sample` agents of each size class, asked in turn: hybrid search (limit 10) and per-turn block
(`Service.prefetch`, a new session each call) p50 / p95 over `--queries` new query sentences with
their real e5 pass; CPU per hybrid search in PostgreSQL (its local processes, from /proc) and in the
searching process; the statements and pool connections a search takes; recall@10 of the narratives'
dense lookup against an exact scan of that agent's rows for e5 question vectors (ann-benchmarks'
count and strict ids); the plan of that lookup. Then
`--sqlite`: an agent of each of those sizes alone in a SQLite store (copied from PostgreSQL by
`tideline db copy`), hybrid and per-turn p50 / p95, its in-memory indexes warm.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

import numpy as np
from harness import pct
from psycopg import ClientCursor
from scale import Ids, _postgres_cpu, copy_agent, finish, queries, sandbox_settings, server, server_start
from sqlalchemy import event, text
from sqlalchemy.engine import make_url

from tests.pgvector_server import drop_database, fresh_database
from tideline_core.compose import build_embedder, compose
from tideline_core.domain.inputs import PrefetchIn, SearchIn
from tideline_core.embedding import LOCAL_MODEL
from tideline_core.search import weights
from tideline_core.search.hybrid import HybridSearch
from tideline_core.service import NullJobQueue
from tideline_core.service.maintenance import copy as copy_store
from tideline_core.store import agent_indexes, pg_vectors
from tideline_core.store.database import Database

KEYWORD_REFERENCE = 1000  # keyword candidates per view of the deeper search the ranking is compared with


def _mix(text_: str) -> list[tuple[int, int]]:
    """`--mix`: COUNTxNARRATIVES, comma-separated (e.g. 8x100000,952x1000)."""
    try:
        mix = [(int(count), int(size)) for count, size in (part.lower().split("x") for part in text_.split(","))]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text_!r} is not COUNTxNARRATIVES[,COUNTxNARRATIVES...]") from None
    if any(count < 1 or size < 10 for count, size in mix):
        raise argparse.ArgumentTypeError(f"{text_!r}: every count must be at least 1 and every size at least 10")
    return mix


def agents(mix: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """(agent id, narratives) of every agent of the mix, the sizes interleaved (as agents arrive in a real store)."""
    out = [(f"t{size}-{i}", size) for count, size in mix for i in range(count)]
    return sorted(out, key=lambda agent: (int(agent[0].split("-")[1]) % 97, agent[0]))


def load(url: str, mix: list[tuple[int, int]], embedder: Any, layout: str) -> dict[str, float]:
    """Every agent of the mix, by COPY; then the vector indexes of `layout`. Seconds for each part."""
    started = time.monotonic()
    db = Database.open(url)
    with db.write() as conn:
        agent_indexes.drop_all(conn)
    raw = db.engine.raw_connection()
    table: dict[str, np.ndarray] = {}
    ids, rows_s, vectors_s = Ids(), 0.0, 0.0
    try:
        dbapi = raw.driver_connection
        everyone = agents(mix)
        for n, (agent, size) in enumerate(everyone):
            spent = copy_agent(
                dbapi, agent, size, max(size // 10, 1), embedder, seed=10 * n + 1, first=ids, table=table
            )
            rows_s += spent["rows_s"]
            vectors_s += spent["vectors_s"]
            if n % 100 == 99:
                print(f"  {n + 1} agents loaded, {time.monotonic() - started:.0f} s", flush=True)
        indexed = time.monotonic()
        finish(db, dbapi, (agent_indexes.HNSW_M, agent_indexes.HNSW_EF_CONSTRUCTION))
        if layout == "shared":
            set_shared(db)
    finally:
        raw.close()
        db.close()
    done = time.monotonic()
    return {"rows_s": rows_s, "vectors_s": vectors_s, "index_s": done - indexed, "total_s": done - started}


def set_shared(db: Database) -> None:
    """The layout before indexes per agent: one HNSW graph per vector view and one GIN index per keyword column,
    each over every agent's rows."""
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("SET maintenance_work_mem = '2GB'"))
        conn.execute(text("SET max_parallel_maintenance_workers = 2"))
        agent_indexes.restore_shared(conn, vectors=True)


def latency(url: str, sample: list[str], rounds: int) -> dict[str, float]:
    """Hybrid search, per-turn block: p50 / p95 over `rounds` new queries, the agents of `sample` in turn; CPU per
    search (PostgreSQL's local processes, the searching process)."""
    service = compose(sandbox_settings(url), jobs=NullJobQueue())
    try:
        searcher = service.searcher
        for agent in sample:  # warm: the model, the pool, the first pages of each agent's rows
            for q in queries(3, 1):
                searcher.search(agent, SearchIn(query=q))
                service.prefetch(agent, PrefetchIn(query=q, session_id="warm"))
        out: dict[str, float] = {}
        for name, call in (
            ("search", lambda agent, q, i: searcher.search(agent, SearchIn(query=q, limit=10))),
            ("turn", lambda agent, q, i: service.prefetch(agent, PrefetchIn(query=q, session_id=f"s{i}"))),
        ):
            times = []
            pg_before, own_before = _postgres_cpu(), time.process_time()
            for i, q in enumerate(queries(rounds, 2 + len(out))):
                started = time.perf_counter()
                call(sample[i % len(sample)], q, i)
                times.append((time.perf_counter() - started) * 1000)
            pg_after = _postgres_cpu()
            out[f"{name}_p50"], out[f"{name}_p95"] = pct(times, 50), pct(times, 95)
            out[f"{name}_own_ms"] = (time.process_time() - own_before) / rounds * 1000
            if pg_before is not None and pg_after is not None:
                out[f"{name}_pg_ms"] = (pg_after - pg_before) / rounds * 1000
        return out
    finally:
        service.close()


def round_trips(url: str, sample: list[str], rounds: int) -> tuple[float, float]:
    """Statements and pool connections a hybrid search takes, mean over `rounds` new queries (each connection also
    costs a round trip for its ping, and one holding a transaction for its BEGIN and its COMMIT). Counted apart from
    `latency`, whose figures the counting would slow."""
    service = compose(sandbox_settings(url), jobs=NullJobQueue())
    counts = [0, 0]

    def statement(*_: Any) -> None:
        counts[0] += 1

    def connection(*_: Any) -> None:
        counts[1] += 1

    try:
        searcher = service.searcher
        engine = cast(Any, searcher).source.db.engine
        for agent in sample:
            searcher.search(agent, SearchIn(query=queries(1, 1)[0]))
        event.listen(engine, "before_cursor_execute", statement)
        event.listen(engine.pool, "checkout", connection)
        for i, q in enumerate(queries(rounds, 5)):
            searcher.search(sample[i % len(sample)], SearchIn(query=q, limit=10))
        return counts[0] / rounds, counts[1] / rounds
    finally:
        service.close()


def depth_agreement(url: str, sample: list[str], rounds: int, deeper: int, k: int = 10) -> float:
    """The share of a hybrid search's top k that the same search finds with its keyword views `deeper` candidates
    deep (`weights.KEYWORD_DEPTH` is what a search asks for): what the shallower candidate lists cost in ranking."""
    service = compose(sandbox_settings(url), jobs=NullJobQueue())
    try:
        shallow = cast(HybridSearch, service.searcher)
        deep = HybridSearch(shallow.embedder, shallow.source, shallow.store_rows, keyword_depth=deeper)
        kept = 0
        for i, q in enumerate(queries(rounds, 2)):
            agent, asked = sample[i % len(sample)], SearchIn(query=q, limit=k)
            got = {(h.kind, h.id) for h in shallow.search(agent, asked).hits}
            want = {(h.kind, h.id) for h in deep.search(agent, asked).hits}
            kept += len(got & want)
        return kept / (rounds * k)
    finally:
        service.close()


def recall(url: str, sample: list[str], vectors: np.ndarray, ef_search: int, k: int = 10) -> tuple[float, float, float]:
    """Recall@k of the narratives' dense lookup against an exact scan of the same agent's rows, over `vectors` spread
    over the agents of `sample`: (ann-benchmarks' count: a row within 1e-3 of the exact k-th cosine; strict ids;
    mean ms of the lookup)."""
    db = Database.open(url, run_migrations=False)
    strict = close = 0
    spent = 0.0
    try:
        for i, q in enumerate(vectors):
            agent = sample[i % len(sample)]
            with db.read() as conn:
                begun = time.perf_counter()
                approx = pg_vectors.nearest(conn, agent, "narrative", "base", LOCAL_MODEL, q, k, ef_search=ef_search)
                spent += time.perf_counter() - begun
                exact = pg_vectors.nearest(conn, agent, "narrative", "base", LOCAL_MODEL, q, k, exact=True)
            strict += len({row for row, _ in approx} & {row for row, _ in exact})
            if exact:
                worst = exact[-1][1] - 1e-3
                close += sum(1 for _, cosine in approx if cosine >= worst)
    finally:
        db.close()
    n = len(vectors) * k
    return close / n, strict / n, spent / len(vectors) * 1000


def plan(url: str, agent: str, vector: np.ndarray) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the narratives' dense lookup for one agent: what it reads."""
    db = Database.open(url, run_migrations=False)
    captured: list[str] = []
    try:
        with db.read() as conn:
            statements: list[str] = []

            def keep(conn_: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
                if "<=>" in statement:
                    statements.append(ClientCursor(cursor.connection).mogrify(statement, parameters))

            event.listen(db.engine, "before_cursor_execute", keep)
            try:
                pg_vectors.nearest(conn, agent, "narrative", "base", LOCAL_MODEL, vector, 10)
            finally:
                event.remove(db.engine, "before_cursor_execute", keep)
            conn.execute(text("SET LOCAL hnsw.iterative_scan = 'relaxed_order'"))
            conn.execute(text(f"SET LOCAL hnsw.max_scan_tuples = {pg_vectors.MAX_SCAN_TUPLES}"))
            conn.execute(text(f"SET LOCAL hnsw.ef_search = {pg_vectors.EF_SEARCH}"))
            for line in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statements[-1])):
                captured.append(re.sub(r"'\[[-0-9.,e]+\]'", "'[…]'", line[0]))  # the query vector's 384 numbers
    finally:
        db.close()
    return captured


def sqlite_latency(admin: str, size: int, embedder: Any, rounds: int) -> dict[str, float]:
    """An agent of `size` narratives alone in a SQLite store (loaded into PostgreSQL, copied by `tideline db copy`):
    hybrid and per-turn p50 / p95 with its in-memory indexes warm."""
    url = fresh_database(admin)
    home = Path(tempfile.mkdtemp(prefix="tideline-tenants-sqlite-"))
    target = f"sqlite:///{home / 'tideline.db'}"
    try:
        db = Database.open(url)
        raw = db.engine.raw_connection()
        try:
            copy_agent(raw.driver_connection, "solo", size, max(size // 10, 1), embedder, seed=7, first=Ids())
            finish(db, raw.driver_connection, (agent_indexes.HNSW_M, agent_indexes.HNSW_EF_CONSTRUCTION))
        finally:
            raw.close()
            db.close()
        copy_store(url, target)
        return latency(target, ["solo"], rounds)
    finally:
        drop_database(admin, url)
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mix", type=_mix, default="8x100000,40x10000,952x1000")
    parser.add_argument("--database-url", help="a URL of any database on a PostgreSQL server with pgvector")
    parser.add_argument("--queries", type=int, default=60, help="queries per size class and measure")
    parser.add_argument("--sample", type=int, default=3, help="agents of each size class asked, in turn")
    parser.add_argument("--layout", choices=("agent", "shared"), default="agent")
    parser.add_argument("--ef-search", default=str(pg_vectors.EF_SEARCH), help="recall at each (comma-separated)")
    parser.add_argument("--sqlite", default="1000,10000", help="agent sizes measured alone on SQLite ('': none)")
    parser.add_argument("--starts", type=int, default=3, help="server starts measured on the many agents' database")
    parser.add_argument("--keep", action="store_true", help="keep the database (printed) for a later look")
    parser.add_argument("--existing", help="measure this kept database (of the same --mix) instead of loading one")
    args = parser.parse_args()
    admin = server(args.database_url)
    model = build_embedder(sandbox_settings(admin))
    everyone = agents(args.mix)
    total = sum(count * size for count, size in args.mix)
    print(
        f"{len(everyone):,} agents, {total:,} narratives and {total // 10:,} turns "
        f"({total + total // 10:,} rows; {total + 2 * (total // 10):,} vectors); layout {args.layout}",
        flush=True,
    )
    url = args.existing or fresh_database(admin)
    try:
        if args.existing:
            db = Database.open(url, run_migrations=False)
            try:
                if args.layout == "shared":
                    set_shared(db)
                else:
                    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                        for name in agent_indexes.SHARED:
                            conn.execute(text(f"DROP INDEX IF EXISTS {name}"))
                    agent_indexes.build(db.engine)
            finally:
                db.close()
        else:
            built = load(url, args.mix, model, args.layout)
            print(
                f"loaded in {built['total_s']:.0f} s (rows {built['rows_s']:.0f} s, "
                f"vectors {built['vectors_s']:.0f} s, indexes and statistics {built['index_s']:.0f} s)",
                flush=True,
            )
        probes = np.asarray(model.queries(queries(60, 90)), dtype=np.float32)
        for size in sorted({size for _, size in args.mix}):
            sample = [agent for agent, n in everyone if n == size][: args.sample]
            print(f"\nagents of {size:,} narratives ({', '.join(sample)}):", flush=True)
            lat = latency(url, sample, args.queries)
            print(f"  hybrid search p50 / p95   {lat['search_p50']:.1f} / {lat['search_p95']:.1f} ms")
            print(f"  per-turn block p50 / p95  {lat['turn_p50']:.1f} / {lat['turn_p95']:.1f} ms")
            pg_ms = f"{lat['search_pg_ms']:.1f} ms" if "search_pg_ms" in lat else "n/a (not on this machine)"
            print(
                f"  CPU a hybrid search costs: PostgreSQL {pg_ms}, the searching process {lat['search_own_ms']:.1f} ms"
            )
            statements, connections = round_trips(url, sample, args.queries)
            print(
                f"  statements / pool connections a hybrid search takes: {statements:.1f} / {connections:.1f} "
                f"(each connection also a ping; one in a transaction a BEGIN and a COMMIT)"
            )
            agreement = depth_agreement(url, sample, args.queries, KEYWORD_REFERENCE)
            print(
                f"  hybrid top 10 kept against keyword views {KEYWORD_REFERENCE:,} deep "
                f"(searches ask {weights.KEYWORD_DEPTH:,}): {agreement:.3f}",
                flush=True,
            )
            for ef in (int(e) for e in args.ef_search.split(",")):
                close, strict, ms = recall(url, sample, probes, ef)
                print(
                    f"  dense recall@10 vs exact (e5 questions), ef_search {ef}: ann-benchmarks (1e-3) {close:.3f}, "
                    f"strict ids {strict:.3f}; the lookup {ms:.1f} ms",
                    flush=True,
                )
            print("  plan of the narratives' dense lookup:")
            for line in plan(url, sample[0], probes[0]):
                print(f"    {line}")
            sys.stdout.flush()
        if args.starts:
            starts = [server_start(url) for _ in range(args.starts)]
            seconds = sorted(start["start_s"] for start in starts)
            print(
                f"\nserver: answers its first memory_search {seconds[0]:.1f}-{seconds[-1]:.1f} s after start "
                f"({len(starts)} starts), RSS {max(start['rss_mib'] for start in starts):.0f} MiB",
                flush=True,
            )
        for size in (int(s) for s in args.sqlite.split(",") if s.strip()):
            lat = sqlite_latency(admin, size, model, args.queries)
            print(
                f"\nSQLite, one agent of {size:,} narratives: hybrid p50 / p95 {lat['search_p50']:.1f} / "
                f"{lat['search_p95']:.1f} ms, per-turn block {lat['turn_p50']:.1f} / {lat['turn_p95']:.1f} ms, "
                f"CPU per search {lat['search_own_ms']:.1f} ms",
                flush=True,
            )
    finally:
        if args.keep or args.existing:
            print(f"kept: {make_url(url).render_as_string(hide_password=True)}")
        else:
            drop_database(admin, url)


if __name__ == "__main__":
    main()
