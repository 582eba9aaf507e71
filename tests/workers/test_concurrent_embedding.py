"""Real ingest workers embedding one agent's writes side by side: every row once, no task failed, nothing left."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import func, select
from words_embedder import WordsEmbedder
from worker_processes import start_worker, stop

from tideline_core.compose import compose
from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.schema import ContextTurn, Embedding, EmbeddingClaim, Narrative, TaskEvent
from workers.queues import Queue

# kombu's Redis transport keeps delivered, not yet acked messages here; read only to know the broker is quiet.
UNACKED_INDEX = "unacked_index"

NARRATIVES = 500
PER_WRITE = 4  # narratives per write: rows come faster than they are embedded, so the runs meet over a backlog
TURN_WRITES = 100  # two turns each: a turn gets two vectors ('base' and 'ctx')
# Small batches: many claims by runs side by side, as in production. The interleaving that once let two runs take
# the same rows is forced, many times over, by tests/tideline_core/test_ingest.py; this is the whole path.
BATCH_SIZE = "2"


class WordsEmbeddings(ThreadingHTTPServer):
    """A bge-m3 style /embed_batch service on loopback (the words embedder: fast, 384 dimensions, so PostgreSQL
    stores its vectors for pgvector as e5's) that counts the texts it was asked to embed."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.embedder = WordsEmbedder()
        self.texts = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/embed_batch"


class _Handler(BaseHTTPRequestHandler):
    server: WordsEmbeddings

    def do_POST(self) -> None:
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["texts"]
        with self.server.lock:
            self.server.texts += len(texts)
        body = json.dumps({"embeddings": self.server.embedder.passages(texts).tolist()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        return


@pytest.fixture
def embeddings() -> Iterator[WordsEmbeddings]:
    server = WordsEmbeddings()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def rows_left(db: Database) -> tuple[int, int]:
    """(rows still pending, claims still held)."""
    with db.read() as conn:
        pending = sum(
            int(conn.execute(select(func.count()).where(table.embedding_state == "pending")).scalar_one())
            for table in (Narrative, ContextTurn)
        )
        claims = int(conn.execute(select(func.count()).select_from(EmbeddingClaim)).scalar_one())
    return pending, claims


def broker_quiet(client: redis.Redis) -> bool:
    """No task message waiting on the ingest queue and none delivered but not yet acked (tasks ack late)."""
    return client.llen(str(Queue.INGEST)) == 0 and client.zcard(UNACKED_INDEX) == 0


@pytest.mark.parametrize(
    "pools", [pytest.param((1, 1), id="two-workers"), pytest.param((4,), id="one-worker-of-four-processes")]
)
def test_ingest_workers_side_by_side_embed_every_row_exactly_once_and_no_task_fails(
    pools: tuple[int, ...],
    settings: Settings,
    database: Database,
    embeddings: WordsEmbeddings,
    celery_jobs: Any,
    redis_client: redis.Redis,
    tmp_path: Path,
    wait_until: Any,
) -> None:
    logs = [tmp_path / f"worker-{i}.log" for i in range(len(pools))]
    env = {
        "TIDELINE_EMBEDDER": "http",
        "TIDELINE_EMBEDDING_URL": embeddings.url,
        "TIDELINE_EMBED_BATCH_SIZE": BATCH_SIZE,
    }
    workers = [
        start_worker(settings, "ingest", log, concurrency=n, hostname=f"ingest{i}@%h", **env)
        for i, (n, log) in enumerate(zip(pools, logs, strict=True))
    ]
    service = compose(settings, jobs=celery_jobs)
    try:
        # Written while the workers run, each write asking for its embed job as a user's writes do.
        for first in range(0, NARRATIVES, PER_WRITE):
            items = [
                NarrativeIn(gesture=f"memory number {i} of the stack run") for i in range(first, first + PER_WRITE)
            ]
            assert all(w.queued for w in service.write_narratives("alice", items))
        for i in range(TURN_WRITES):
            turns = [ContextTurnIn(role=role, content=f"turn {i} said by the {role}") for role in ("user", "assistant")]
            assert service.record_turns("alice", turns).queued
        wait_until(lambda: rows_left(database) == (0, 0), timeout=300, message=f"every row embedded (logs: {tmp_path})")
        wait_until(lambda: broker_quiet(redis_client), timeout=120, message="every embed task finished")
    finally:
        service.close()
        for worker in workers:
            stop(worker)

    with database.read() as conn:
        events = [(e.task_name, e.state, e.detail) for e in conn.execute(select(TaskEvent)).all()]
        counted = select(Embedding.kind, Embedding.view, func.count(), func.count(func.distinct(Embedding.row_id)))
        per_view = {
            (kind, view): (n, rows)
            for kind, view, n, rows in conn.execute(counted.group_by(Embedding.kind, Embedding.view))
        }
    turns = 2 * TURN_WRITES
    assert events == [], "no embed task failed or was retried"
    assert per_view == {
        ("narrative", "base"): (NARRATIVES, NARRATIVES),
        ("context", "base"): (turns, turns),
        ("context", "ctx"): (turns, turns),
    }, "one vector per row and view"
    assert embeddings.texts == NARRATIVES + 2 * turns, "no row was embedded twice"
    for log in logs:
        text = log.read_text()
        assert "IntegrityError" not in text and "UniqueViolation" not in text and "Traceback" not in text, log
