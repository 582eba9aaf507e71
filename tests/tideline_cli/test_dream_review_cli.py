"""`tideline dream review` with review on: the nightly chain on a real worker proposes, the CLI approves or rejects."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import tideline
from dream_helpers import dump, record_day
from sqlalchemy import text

from tests.pgvector_server import pgvector_url  # noqa: F401 - the fixture
from tideline_core.compose import compose
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
from tideline_core.store.database import Database

DERIVED = ("entity_", "topic_cluster", "emb_cluster")


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(embedder="none", dream_review="all")


def memory(db: Database) -> dict[str, Any]:
    """What the memory holds, without the tables the dream rebuilds whole (never proposed)."""
    return {name: rows for name, rows in dump(db).items() if not name.startswith(DERIVED)}


def test_the_nightly_dream_under_review_applies_nothing_until_a_proposal_is_approved_from_the_cli(
    env: dict[str, str], settings: Settings, database: Database, celery_worker: Any, celery_jobs: Any
) -> None:
    env = {**env, "TIDELINE_DREAM_REVIEW": "all"}
    record_day(compose(settings, jobs=celery_jobs, database=database, llm=None), "alice")
    before = memory(database)
    dreamt = tideline(env, "dream", "--now", "--wait", "--json")
    assert dreamt.returncode == 0, dreamt.stderr
    runs = {r["stage"]: r for r in json.loads(dreamt.stdout)}
    assert runs["solidify"]["status"] == "proposed", runs["solidify"]
    assert memory(database) == before, "nothing a proposal holds is applied"

    status = tideline(env, "status")
    assert "dream proposals waiting for review: 1 (tideline dream review)" in status.stdout, status.stdout
    listed = tideline(env, "dream", "review")
    assert listed.returncode == 0, listed.stderr
    assert "insert narratives" in listed.stdout and "--approve RUN" in listed.stdout
    solidify = str(runs["solidify"]["run_id"])
    approved = tideline(env, "dream", "review", "--approve", solidify)
    assert approved.returncode == 0 and f"approved dream run {solidify} (solidify)" in approved.stdout, approved.stderr
    assert memory(database) != before
    again = tideline(env, "dream", "review", "--approve", solidify)
    assert again.returncode == 2 and "was approved: only a waiting proposal can be approved" in again.stderr
    assert tideline(env, "dream", "review").stdout.strip() == "no dream proposals wait for review"

    refresh = tideline(env, "dream", "--now", "--stage", "refresh", "--wait", "--json")  # re-weighs what was approved
    assert refresh.returncode == 0, refresh.stderr
    (proposal,) = json.loads(tideline(env, "dream", "review", "--json").stdout)
    kept = memory(database)
    rejected = tideline(env, "dream", "review", "--reject", str(proposal["run_id"]))
    assert rejected.returncode == 0 and "nothing applied" in rejected.stdout, rejected.stderr
    assert memory(database) == kept
    undone = tideline(env, "dream", "undo", solidify)  # the approved run is undoable as any run
    assert undone.returncode == 0 and memory(database) == before, undone.stderr


def test_an_approve_killed_mid_transaction_leaves_the_proposal_whole_and_it_can_be_approved_again(
    pgvector_url: str,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path, database_url=pgvector_url, embedder="none", dream_review="all")
    service = compose(settings, jobs=NullJobQueue(), llm=None)
    try:
        record_day(service, "alice")
        proposal = service.run_stage("solidify", "alice", trigger="manual", task_id="t-1")["run_id"]
        before = memory(service.db)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
        env.update(
            TIDELINE_HOME=str(tmp_path),
            TIDELINE_DATABASE_URL=pgvector_url,
            TIDELINE_EMBEDDER="none",
            TIDELINE_AGENT="alice",
            TIDELINE_REDIS_URL="redis://127.0.0.1:1/0",
        )
        with service.db.engine.connect() as holder:
            # The approve writes its narratives, then waits here, before it records the run done.
            holder.execute(text("BEGIN; LOCK TABLE dream_changes IN EXCLUSIVE MODE"))
            approving = subprocess.Popen(
                [sys.executable, "-m", "tideline_cli", "dream", "review", "--approve", str(proposal)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                deadline = time.monotonic() + 60
                while not waits_on_the_lock(service.db):
                    assert approving.poll() is None, approving.communicate()
                    assert time.monotonic() < deadline, "the approve never reached the locked table"
                    time.sleep(0.1)
            finally:
                approving.send_signal(signal.SIGKILL)
                approving.wait(30)
            holder.execute(text("ROLLBACK"))
        (waiting,) = service.dream_review("alice")
        assert waiting.run.id == proposal and memory(service.db) == before
        assert service.dream_approve("alice", proposal).run.status == "done"
        assert memory(service.db) != before
    finally:
        service.close()


def waits_on_the_lock(db: Database) -> bool:
    """Whether another session waits for the lock on `dream_changes` (read outside the holder's transaction,
    which sees the activity view as it was when it first read it)."""
    with db.engine.connect() as conn:
        waiting = conn.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%dream_changes%'"
            )
        ).scalar_one()
    return bool(waiting)
