"""A worker killed mid-batch loses nothing: Redis hands its task to the next worker, which finishes the job."""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from worker_processes import kill, start_worker, stop

from tideline_core.domain.inputs import NarrativeIn
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.schema import Embedding, Narrative
from workers.queues import TaskName

DELAY = 0.4  # seconds per embedding request: slow enough to kill a worker in the middle of a batch


class SlowEmbeddings(ThreadingHTTPServer):
    """A bge-m3 style /embed_batch service on loopback that answers slowly and counts its requests."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests = 0
        self.second_request = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/embed_batch"


class _Handler(BaseHTTPRequestHandler):
    server: SlowEmbeddings

    def do_POST(self) -> None:
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["texts"]
        self.server.requests += 1
        if self.server.requests >= 2:
            self.server.second_request.set()
        threading.Event().wait(DELAY)
        vectors = [[b / 255 for b in hashlib.sha256(t.encode()).digest()[:16]] for t in texts]
        body = json.dumps({"embeddings": vectors}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        return


@pytest.fixture
def embeddings() -> Iterator[SlowEmbeddings]:
    server = SlowEmbeddings()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def start_embedding_worker(settings: Settings, embedding_url: str, log: Path, **more: str) -> subprocess.Popen[bytes]:
    defaults = {
        "TIDELINE_EMBEDDER": "http",
        "TIDELINE_EMBEDDING_URL": embedding_url,
        "TIDELINE_EMBED_BATCH_SIZE": "2",
        "TIDELINE_VISIBILITY_TIMEOUT": "8",
        "TIDELINE_RECONCILE_GRACE_SECONDS": "3600",
    }
    return start_worker(settings, "ingest", log, **{**defaults, **more})


def kill_mid_batch(settings: Settings, embeddings: SlowEmbeddings, celery_jobs: Any, log: Path, **more: str) -> None:
    """Start a worker, ask for alice's embedding, and kill -9 the whole worker (pool included) mid-batch."""
    first = start_embedding_worker(settings, embeddings.url, log, **more)
    try:
        assert celery_jobs.embed("alice")
        assert embeddings.second_request.wait(timeout=30), "the first worker never started embedding"
        kill(first)
    finally:
        stop(first)


def test_a_worker_killed_mid_batch_loses_nothing_and_embeds_nothing_twice(
    settings: Settings,
    database: Database,
    embeddings: SlowEmbeddings,
    celery_jobs: Any,
    tmp_path: Path,
    wait_until: Any,
) -> None:
    with database.write() as conn:
        ids = [insert_narrative(conn, "alice", NarrativeIn(gesture=f"memory number {i}")).id for i in range(10)]
    log = tmp_path / "workers.log"
    kill_mid_batch(settings, embeddings, celery_jobs, log)

    def states() -> dict[str, int]:
        with database.read() as conn:
            rows = conn.execute(select(Narrative.embedding_state, func.count()).group_by(Narrative.embedding_state))
            return {state: int(n) for state, n in rows}

    assert states().get("pending", 0) > 0, "the kill came too late to test anything"
    second = start_embedding_worker(settings, embeddings.url, log)
    try:
        # No reconcile and no new enqueue: the unacked task itself comes back after the visibility timeout.
        wait_until(
            lambda: states() == {"done": 10}, timeout=45, message=f"all rows embedded by the second worker (log: {log})"
        )
    finally:
        stop(second)
    with database.read() as conn:
        per_row = dict(
            conn.execute(
                select(Embedding.row_id, func.count()).where(Embedding.kind == "narrative").group_by(Embedding.row_id)
            ).all()
        )
    assert per_row == dict.fromkeys(ids, 1)
    assert str(TaskName.EMBED_PENDING) in log.read_text()


def test_a_killed_workers_task_runs_again_as_soon_as_it_is_known_dead_not_after_the_visibility_timeout(
    settings: Settings,
    database: Database,
    embeddings: SlowEmbeddings,
    celery_jobs: Any,
    tmp_path: Path,
    wait_until: Any,
) -> None:
    # Redis would hand the message back only after an hour (the visibility timeout); a worker that has
    # stopped beating for the liveness span is known dead, and a live worker gives its messages back.
    hour, span = {"TIDELINE_VISIBILITY_TIMEOUT": "3600"}, {"TIDELINE_WORKER_LIVENESS_SECONDS": "4"}
    with database.write() as conn:
        for i in range(10):
            insert_narrative(conn, "alice", NarrativeIn(gesture=f"memory number {i}"))
    log = tmp_path / "workers.log"
    kill_mid_batch(settings, embeddings, celery_jobs, log, **hour, **span)

    def pending() -> int:
        with database.read() as conn:
            return int(conn.execute(select(func.count()).where(Narrative.embedding_state == "pending")).scalar_one())

    assert pending() > 0, "the kill came too late to test anything"
    second = start_embedding_worker(settings, embeddings.url, log, **hour, **span)
    try:
        # No reconcile, no new enqueue, and an hour's visibility timeout: only the sweep can bring it back.
        wait_until(lambda: pending() == 0, timeout=40, message=f"the dead worker's task run again (log: {log})")
    finally:
        stop(second)
    assert "gave back 1 task message(s) held by workers that are gone" in log.read_text()
