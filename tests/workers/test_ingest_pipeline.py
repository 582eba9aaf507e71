"""The ingest pipeline through real parts: store → CeleryJobQueue → Redis → worker → store → search."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import func, select

from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn, SearchIn
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.events import recent_task_events
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.schema import AttentionHit, ContextTurn, Embedding, Narrative
from tideline_core.store.status import counts
from workers.queues import TaskName


def write(db: Database, agent: str, gesture: str, **fields: Any) -> int:
    with db.write() as conn:
        return insert_narrative(conn, agent, NarrativeIn(gesture=gesture, **fields)).id


def state(db: Database, narrative_id: int) -> str:
    with db.read() as conn:
        return str(conn.execute(select(Narrative.embedding_state).where(Narrative.id == narrative_id)).scalar_one())


def all_embedded(db: Database, agent: str) -> bool:
    with db.read() as conn:
        c = counts(conn, agent)
    return c.pending_narratives == 0 and c.pending_context == 0


def test_a_narrative_written_through_the_service_is_embedded_by_the_worker_and_then_found_by_dense_search(
    settings: Settings, database: Database, celery_worker: Any, celery_jobs: Any, wait_until: Any
) -> None:
    service = compose(settings, jobs=celery_jobs)
    try:
        walk = service.write_narrative(
            "alice", NarrativeIn(gesture="We walked along the river at dusk and talked about my sister's wedding")
        )
        other = service.write_narrative(
            "alice", NarrativeIn(gesture="The build server ran out of disk space during the release")
        )
        assert walk.queued and other.queued  # the embedding job went to the broker after each commit

        wait_until(lambda: all_embedded(database, "alice"), timeout=30, message="both narratives embedded")
        outcome = service.search("alice", SearchIn(query="an evening stroll by the water", mode="dense"))
    finally:
        service.close()
    assert outcome.mode == "dense" and outcome.degraded is None
    assert outcome.hits[0].id == walk.id


def test_a_write_made_while_the_broker_is_down_stands_and_is_embedded_after_reconcile(
    make_settings: Any, database: Database, celery_worker: Any, celery_app: Any, wait_until: Any, tmp_path: Any
) -> None:
    dead = make_settings(redis_url=f"redis+socket://{tmp_path}/no-broker.sock")
    from workers.jobqueue import CeleryJobQueue

    down = CeleryJobQueue(dead)
    narrative = write(database, "alice", "Wrote this while Redis was down")
    started = time.monotonic()
    assert down.embed("alice") is False
    assert time.monotonic() - started < 0.5, "a dead broker must fail fast"
    down.close()
    assert state(database, narrative) == "pending"

    # The broker is back; the reconciler (beat runs it every interval) finds the row past its grace period.
    from workers.resources import resources_of

    resources_of(celery_app).settings = make_settings(reconcile_grace_seconds=1)
    time.sleep(1.1)
    result = celery_app.send_task(str(TaskName.RECONCILE)).get(timeout=15)
    assert result["agents"] == ["alice"]
    wait_until(lambda: state(database, narrative) == "done", timeout=30, message="reconciled row embedded")


def test_the_reconciler_leaves_rows_inside_their_grace_period_alone(
    database: Database, celery_worker: Any, celery_app: Any
) -> None:
    narrative = write(database, "alice", "Just written; its own enqueue is still on the way")
    result = celery_app.send_task(str(TaskName.RECONCILE)).get(timeout=15)
    assert result["agents"] == []
    assert state(database, narrative) == "pending"


def test_attention_hits_are_logged_once_for_the_agents_own_narratives(
    database: Database, celery_worker: Any, celery_app: Any, celery_jobs: Any, wait_until: Any
) -> None:
    mine = write(database, "alice", "A memory of alice")
    theirs = write(database, "bob", "A memory of bob")
    assert celery_jobs.log_attention("alice", [(mine, 0.8), (theirs, 0.7)], "search")

    def logged() -> list[tuple[str, int]]:
        with database.read() as conn:
            return [tuple(r) for r in conn.execute(select(AttentionHit.agent_id, AttentionHit.narrative_id))]

    wait_until(logged, message="the attention hit")
    # A redelivered task (same retrieval time) adds nothing.
    at = "2026-05-08T12:00:00Z"
    for _ in range(2):
        celery_app.send_task(
            str(TaskName.LOG_ATTENTION), kwargs={"agent_id": "alice", "hits": [[mine, 0.5]], "source": "t1", "at": at}
        ).get(timeout=15)
    assert sorted(logged()) == [("alice", mine), ("alice", mine)]


def test_a_session_import_is_stored_once_and_embedded(
    database: Database, celery_worker: Any, celery_app: Any, wait_until: Any
) -> None:
    turns = [
        {"role": "user", "content": "Where did we leave the map?", "session_id": "s1"},
        {"role": "assistant", "content": "In the glovebox, under the manual.", "session_id": "s1"},
    ]
    kwargs = {"agent_id": "alice", "turns": turns, "import_id": "session-file-1"}
    first = celery_app.send_task(str(TaskName.IMPORT_TURNS), kwargs=kwargs).get(timeout=15)
    again = celery_app.send_task(str(TaskName.IMPORT_TURNS), kwargs=kwargs).get(timeout=15)
    assert (first["imported"], again["imported"], again["already_imported"]) == (2, 0, True)
    wait_until(lambda: all_embedded(database, "alice"), timeout=30, message="imported turns embedded")
    with database.read() as conn:
        assert counts(conn, "alice").context_turns == 2


def test_an_import_with_one_bad_turn_stores_nothing_and_shows_up_in_the_last_task_errors(
    database: Database, celery_worker: Any, celery_app: Any, wait_until: Any
) -> None:
    turns = [{"role": "user", "content": "fine"}, {"role": "narrator", "content": "not a role"}]
    celery_app.send_task(str(TaskName.IMPORT_TURNS), kwargs={"agent_id": "alice", "turns": turns})

    def failures() -> list[Any]:
        with database.read() as conn:
            return [e for e in recent_task_events(conn, limit=5) if e.state == "failure"]

    event = wait_until(failures, message="the recorded failure")[0]
    assert event.task_name == TaskName.IMPORT_TURNS and event.agent_id == "alice"
    assert "turns[1].role" in event.detail
    with database.read() as conn:
        assert conn.execute(select(func.count()).select_from(ContextTurn)).scalar_one() == 0


def test_an_embedder_outage_is_retried_not_dropped_and_the_retry_is_recorded(
    make_settings: Any, database: Database, celery_jobs: Any, wait_until: Any
) -> None:
    from celery.contrib.testing.worker import start_worker

    from workers.app import create_app
    from workers.resources import resources_of

    # A worker whose embedder is an HTTP service nobody answers at.
    app = create_app(make_settings(embedder="http", embedding_url="http://127.0.0.1:1/embed_batch"))
    narrative = write(database, "alice", "Embedder is down right now")

    def retries() -> list[Any]:
        with database.read() as conn:
            return [e for e in recent_task_events(conn, limit=5) if e.state == "retry"]

    with start_worker(app, queues=["ingest"], pool="threads", concurrency=1, perform_ping_check=False):
        celery_jobs.embed("alice")
        event = wait_until(retries, timeout=20, message="a recorded retry")[0]
    resources_of(app).close()
    app.close()
    assert event.task_name == TaskName.EMBED_PENDING and "embedding service" in event.detail
    assert state(database, narrative) == "pending"
    with database.read() as conn:
        assert conn.execute(select(func.count()).select_from(Embedding)).scalar_one() == 0


def test_a_burst_of_writes_leaves_one_embed_job_waiting_per_agent_and_all_get_embedded(
    settings: Settings, database: Database, celery_app: Any, celery_jobs: Any, wait_until: Any
) -> None:
    service = compose(settings, jobs=celery_jobs)
    try:
        for i in range(30):
            assert service.write_narrative("alice", NarrativeIn(gesture=f"burst note {i}")).queued
        service.write_narrative("bob", NarrativeIn(gesture="bob's only note"))
        # No worker yet: every write asked for embedding, but one job per agent covers all its rows.
        assert celery_jobs.queue_depths()["ingest"] == 2

        from celery.contrib.testing.worker import start_worker

        with start_worker(celery_app, queues=["ingest"], pool="threads", concurrency=2, perform_ping_check=False):
            wait_until(lambda: all_embedded(database, "alice") and all_embedded(database, "bob"), timeout=60)
    finally:
        service.close()
    with database.read() as conn:
        assert conn.execute(select(func.count()).select_from(Embedding)).scalar_one() == 31
