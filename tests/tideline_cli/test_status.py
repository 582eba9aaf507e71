"""`tideline status`: rows, ingest lag, queues, live workers, the beat holding the schedule and the last dream."""

from __future__ import annotations

import json
import os
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

import redis
from cli_helpers import tideline
from sqlalchemy import update
from sqlalchemy.engine import make_url

from tests.ports import free_port
from tideline_core.domain.inputs import NarrativeIn
from tideline_core.dream.runner.runs import NIGHTLY, fail_run, start_run
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.schema import DreamRun, Narrative
from tideline_core.text.dates import utcnow
from workers.beat import SingleBeatScheduler
from workers.liveness import Heartbeat


def test_status_reports_the_ingest_lag_the_workers_the_beat_and_the_last_nightly_dream(
    database: Database, env: dict[str, str], celery_app: Any, redis_client: redis.Redis
) -> None:
    with database.write() as conn:
        waiting = insert_narrative(conn, "alice", NarrativeIn(gesture="waiting for its vector")).id
        conn.execute(
            update(Narrative).where(Narrative.id == waiting).values(created_at=utcnow() - timedelta(minutes=5))
        )
        for stage in ("scan", "solidify", "refresh"):
            start_run(conn, "alice", "2026-11-29", stage, {"trigger": "nightly"}, run_key=NIGHTLY)
        conn.execute(update(DreamRun).where(DreamRun.stage != "refresh").values(status="done"))
        fail_run(conn, "alice", "2026-11-29", "refresh", "worker lost", run_key=NIGHTLY)
    heartbeat = Heartbeat(redis_client, "ingest@elsewhere", ["ingest"], lambda tag: None, span=30)
    heartbeat.start()
    beat = SingleBeatScheduler(app=celery_app)
    try:
        beat.tick()
        shown = tideline(env, "status", "--json")
        text = tideline(env, "status")
    finally:
        beat.close()
        heartbeat.stop()
    assert shown.returncode == 0 and text.returncode == 0, shown.stderr + text.stderr
    report = json.loads(shown.stdout)
    assert report["embeddings_pending"] == 1 and 300 <= report["ingest_lag_seconds"] < 400
    assert report["queues"] == {"ingest": 0, "dream": 0}
    assert report["workers"] == {"ingest@elsewhere": ["ingest"]}
    me = f"{socket.gethostname()}#{os.getpid()}"
    assert report["beat"] == {"holder": me, "beats": [{"node": me, "role": "active"}]}
    last = report["last_dream"]
    assert (last["day"], last["run_key"], last["trigger"]) == ("2026-11-29", "nightly", "nightly")
    assert [(s["stage"], s["status"], s["error"]) for s in last["stages"]] == [
        ("scan", "done", ""),
        ("solidify", "done", ""),
        ("refresh", "failed", "worker lost"),
    ]
    assert "pending: narratives 1, context 0; the oldest has waited 5m" in text.stdout
    assert "workers: ingest@elsewhere [ingest]" in text.stdout
    assert f"beat: {me} holds the schedule" in text.stdout
    assert (
        "last dream: 2026-11-29 (nightly)\n    scan: done\n    solidify: done\n    refresh: failed (worker lost)"
        in (text.stdout)
    )


def test_status_says_when_no_beat_holds_the_schedule_and_nothing_waits(database: Database, env: dict[str, str]) -> None:
    port = str(free_port())  # where no console listens
    env = {**env, "TIDELINE_CONSOLE_PORT": port}
    shown = tideline(env, "status", "--json")
    text = tideline(env, "status")
    report = json.loads(shown.stdout)
    assert report["beat"] == {"holder": None, "beats": []}
    assert report["ingest_lag_seconds"] is None and report["last_dream"] is None
    assert "beat: none holds the schedule: nothing periodic is sent" in text.stdout
    assert "the oldest has waited" not in text.stdout and "last dream" not in text.stdout
    assert report["console"] == {"url": f"http://127.0.0.1:{port}/", "answering": False}
    assert f"console: http://127.0.0.1:{port}/ (not running)" in text.stdout


def test_status_leaves_the_beat_out_when_the_broker_is_unreachable(
    database: Database, env: dict[str, str], tmp_path: Path
) -> None:
    env["TIDELINE_REDIS_URL"] = f"redis+socket://{tmp_path}/absent.sock"
    report = json.loads(tideline(env, "status", "--json").stdout)
    assert report["queues"] is None and report["beat"] is None


def test_status_never_prints_the_database_password(env: dict[str, str], pgvector_url: str) -> None:
    # The test server trusts local connections: a password in the URL is accepted and ignored.
    env["TIDELINE_DATABASE_URL"] = make_url(pgvector_url).set(password="hunter2-secret").render_as_string(False)
    shown, text = tideline(env, "status", "--json"), tideline(env, "status")
    assert shown.returncode == 0 and text.returncode == 0, shown.stderr + text.stderr
    assert "hunter2-secret" not in shown.stdout + text.stdout
    assert ":***@" in json.loads(shown.stdout)["database"] and ":***@" in text.stdout


def test_status_of_an_agent_without_memories_names_the_agents_that_have_some(
    database: Database, env: dict[str, str]
) -> None:
    with database.write() as conn:
        for gesture in ("one", "two"):
            insert_narrative(conn, "alice", NarrativeIn(gesture=gesture))
        insert_narrative(conn, "bob", NarrativeIn(gesture="three"))
    text = tideline(env, "status", "--agent", "nobody")
    report = json.loads(tideline(env, "status", "--agent", "nobody", "--json").stdout)
    assert "agents with memories here: alice (2 rows), bob (1 rows)" in text.stdout
    assert "--agent or TIDELINE_AGENT" in report["other_agents"]
    assert json.loads(tideline(env, "status", "--json").stdout)["other_agents"] is None  # alice has memories
