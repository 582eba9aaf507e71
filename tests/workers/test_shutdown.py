"""A worker shut down warm (SIGTERM), or warm then cold (SIGQUIT), loses nothing and runs each task to its end once."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import func, select
from test_worker_crash import SlowEmbeddings, embeddings, start_embedding_worker
from worker_processes import stop

from tideline_core.domain.inputs import NarrativeIn
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.schema import Embedding, Narrative

__all__ = ["embeddings"]  # the fixture, shared with the crash tests

# Only the shutdown itself may hand a message back: no visibility timeout, no liveness sweep within the test.
LONG = {"TIDELINE_VISIBILITY_TIMEOUT": "3600", "TIDELINE_WORKER_LIVENESS_SECONDS": "3600"}
SUCCEEDED = re.compile(r"Task tideline\.ingest\.embed_pending\[([0-9a-f-]+)\] succeeded")
RECEIVED = re.compile(r"Task tideline\.ingest\.embed_pending\[([0-9a-f-]+)\] received")


@dataclass(frozen=True)
class Workers:
    """Embedding workers started against the slow embeddings service, each logging to a file of the test's."""

    settings: Settings
    embeddings: SlowEmbeddings
    logs: Path

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def start(self, log: Path) -> subprocess.Popen[bytes]:
        return start_embedding_worker(self.settings, self.embeddings.url, log, **LONG)

    def wait_for_embedding(self, log: Path) -> None:
        """Until a worker is inside an embedding task (its second request to the service)."""
        assert self.embeddings.second_request.wait(timeout=60), f"the worker never started embedding (log: {log})"


@pytest.fixture
def workers(settings: Settings, embeddings: SlowEmbeddings, tmp_path: Path) -> Workers:
    return Workers(settings, embeddings, tmp_path)


def write(database: Database, agent: str, count: int) -> list[int]:
    with database.write() as conn:
        return [insert_narrative(conn, agent, NarrativeIn(gesture=f"{agent}'s memory {i}")).id for i in range(count)]


def states(database: Database, agent: str) -> dict[str, int]:
    with database.read() as conn:
        rows = conn.execute(
            select(Narrative.embedding_state, func.count())
            .where(Narrative.agent_id == agent)
            .group_by(Narrative.embedding_state)
        )
        return {state: int(n) for state, n in rows}


def vectors_per_row(database: Database) -> dict[int, int]:
    with database.read() as conn:
        query = select(Embedding.row_id, func.count()).where(Embedding.kind == "narrative").group_by(Embedding.row_id)
        return {int(row): int(n) for row, n in conn.execute(query)}


def ended(process: subprocess.Popen[bytes], timeout: float) -> int:
    """The worker's exit code; it must exit by itself within `timeout` (the fixture's stop is only a safety net)."""
    return process.wait(timeout=timeout)


def test_a_warm_shutdown_finishes_the_running_task_and_leaves_the_waiting_one_on_the_queue(
    workers: Workers, database: Database, celery_jobs: Any, redis_client: redis.Redis, wait_until: Any
) -> None:
    alice = write(database, "alice", 6)
    bob = write(database, "bob", 2)
    log = workers.log("workers")
    worker = workers.start(log)
    try:
        assert celery_jobs.embed("alice")
        workers.wait_for_embedding(log)
        assert celery_jobs.embed("bob")  # queued behind alice's: the worker takes one task at a time
        os.kill(worker.pid, signal.SIGTERM)  # the worker alone, as docker stop does; its pool is its business
        assert ended(worker, timeout=30) == 0
    finally:
        stop(worker)
    assert states(database, "alice") == {"done": 6}, "the running task was not finished before the worker left"
    assert states(database, "bob") == {"pending": 2} and redis_client.llen("ingest") == 1  # waiting, not lost
    assert len(SUCCEEDED.findall(log.read_text())) == 1

    second = workers.start(log)
    try:
        wait_until(lambda: states(database, "bob") == {"done": 2}, timeout=45, message=f"bob's rows (log: {log})")
    finally:
        stop(second)
    assert vectors_per_row(database) == dict.fromkeys(alice + bob, 1)


def test_a_cold_shutdown_hands_the_interrupted_task_back_at_once_and_the_next_worker_completes_it_once(
    workers: Workers, database: Database, celery_jobs: Any, redis_client: redis.Redis, wait_until: Any
) -> None:
    ids = write(database, "alice", 10)
    first_log, second_log = workers.log("first"), workers.log("second")
    first = workers.start(first_log)
    try:
        assert celery_jobs.embed("alice")
        workers.wait_for_embedding(first_log)
        os.kill(first.pid, signal.SIGTERM)  # warm: it would wait for the task...
        time.sleep(0.2)
        os.kill(first.pid, signal.SIGQUIT)  # ...cold: cancel it now
        ended(first, timeout=15)
    finally:
        stop(first)
    assert states(database, "alice").get("pending", 0) > 0, "the shutdown came too late to interrupt anything"
    # Back on the queue at once, not after the visibility timeout or a liveness sweep (both an hour here).
    assert redis_client.llen("ingest") == 1 and redis_client.hlen("unacked") == 0
    [interrupted] = RECEIVED.findall(first_log.read_text())
    assert SUCCEEDED.findall(first_log.read_text()) == []

    second = workers.start(second_log)
    try:
        wait_until(
            lambda: states(database, "alice") == {"done": 10}, timeout=45, message=f"every row (log: {second_log})"
        )
        wait_until(lambda: SUCCEEDED.findall(second_log.read_text()), timeout=15, message="the task to succeed")
    finally:
        stop(second)
    assert SUCCEEDED.findall(second_log.read_text()) == [interrupted]  # the same task, completed once
    assert vectors_per_row(database) == dict.fromkeys(ids, 1)
