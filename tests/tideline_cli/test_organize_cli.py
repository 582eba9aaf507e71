"""`tideline recluster | refresh | graph | scan` as real subprocesses, served by the in-process worker on one Redis."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cli_helpers import tideline
from seeds import seed

from tideline_core.store.database import Database
from workers import locks


def test_recluster_with_wait_follows_the_task_and_prints_its_result(
    env: dict[str, str], database: Database, celery_worker: Any
) -> None:
    seed(database)
    done = tideline(env, "recluster", "--wait")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("recluster: ") and " (run " in done.stdout.splitlines()[0]
    assert "  topic_clusters: 5" in done.stdout and "  soft_clusters: " in done.stdout
    assert not re.search(r"\b(True|False|None)\b", done.stdout), done.stdout  # no Python reprs
    states = [line.rsplit(": ", 1)[1] for line in done.stderr.splitlines() if line.startswith("recluster ")]
    assert states[-1] == "SUCCESS" and len(states) == len(set(states))  # each state change shown once


def test_scan_with_wait_prints_the_markdown_report_and_json_on_request(
    env: dict[str, str], database: Database, celery_worker: Any
) -> None:
    seed(database)
    report = tideline(env, "scan", "--wait")
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith("# Unindexed context scan") and "Track A" in report.stdout
    graph = tideline(env, "graph", "--wait", "--json", "--agent", "alice")
    assert graph.returncode == 0, graph.stderr
    assert json.loads(graph.stdout)["nodes"] == 3


def test_without_wait_it_prints_the_task_id_and_returns(env: dict[str, str], database: Database) -> None:
    queued = tideline(env, "refresh", "--json")
    assert queued.returncode == 0, queued.stderr
    assert json.loads(queued.stdout)["job"] == "refresh" and json.loads(queued.stdout)["task_id"]


def test_a_job_is_refused_while_the_nightly_dream_runs_and_fails_clearly_without_a_broker(
    env: dict[str, str], database: Database, redis_client: Any, tmp_path: Path
) -> None:
    locks.acquire(redis_client, "alice", locks.nightly_token("chain"), 60)
    busy = tideline(env, "recluster", "--wait")
    assert busy.returncode == 2 and "nightly dream for agent alice is running; try again later" in busy.stderr

    env["TIDELINE_REDIS_URL"] = f"redis+socket://{tmp_path}/absent.sock"
    down = tideline(env, "scan")
    assert down.returncode == 2 and "cannot reach the broker" in down.stderr and down.stdout == ""
