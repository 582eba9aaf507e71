"""Status reads how long the oldest write has waited for its embedding, and the latest whole dream stage by stage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.dream.runner.runs import NIGHTLY, WHOLE_DREAM, fail_run, start_run
from tideline_core.service import Service
from tideline_core.store.schema import ContextTurn, DreamRun, Narrative
from tideline_core.text.dates import utcnow


def test_the_ingest_lag_is_the_age_of_the_oldest_write_still_waiting_for_its_embedding(service: Service) -> None:
    assert service.status("alice").ingest_lag_seconds is None  # nothing written, nothing waits
    old = service.write_narrative("alice", NarrativeIn(gesture="written a while ago")).id
    new = service.write_narrative("alice", NarrativeIn(gesture="written just now")).id
    service.write_narrative("bob", NarrativeIn(gesture="bob's own backlog"))
    with service.db.write() as conn:
        conn.execute(update(Narrative).where(Narrative.id == old).values(created_at=utcnow() - timedelta(seconds=90)))
        conn.execute(
            update(Narrative).where(Narrative.agent_id == "bob").values(created_at=utcnow() - timedelta(days=3))
        )
    report = service.status("alice")
    assert report.ingest_lag_seconds is not None and 90 <= report.ingest_lag_seconds < 120
    assert report.oldest_pending_at is not None and report.embeddings_pending == 2

    with service.db.write() as conn:
        conn.execute(update(Narrative).where(Narrative.id == old).values(embedding_state="done"))
    assert (service.status("alice").ingest_lag_seconds or 0) < 30  # now the newer one is the oldest waiting
    with service.db.write() as conn:
        conn.execute(update(Narrative).where(Narrative.id == new).values(embedding_state="done"))
    caught_up = service.status("alice")
    assert caught_up.ingest_lag_seconds is None and caught_up.oldest_pending_at is None


def test_a_turn_waits_from_when_it_was_recorded_not_from_the_time_it_carries(service: Service) -> None:
    # An imported session says it happened last year; it has waited only since the import.
    service.record_turns(
        "alice", [ContextTurnIn(role="user", content="hello", created_at=datetime(2025, 1, 1, 10, tzinfo=UTC))]
    )
    lag = service.status("alice").ingest_lag_seconds
    assert lag is not None and lag < 30
    with service.db.write() as conn:
        conn.execute(update(ContextTurn).values(recorded_at=utcnow() - timedelta(minutes=10)))
    lag = service.status("alice").ingest_lag_seconds
    assert lag is not None and 600 <= lag < 640


def test_the_last_dream_is_the_latest_whole_dream_with_each_stage_in_the_order_it_ran(service: Service) -> None:
    assert service.status("alice").last_dream == ()
    with service.db.write() as conn:
        for stage in ("scan", "solidify", "refresh"):
            start_run(conn, "alice", "2026-11-28", stage, {"trigger": "nightly"}, run_key=NIGHTLY)
        manual = f"{WHOLE_DREAM}task-7"
        for stage in ("scan", "solidify", "refresh", "recluster"):
            start_run(conn, "alice", "2026-11-29", stage, {"trigger": "manual"}, run_key=manual)
        fail_run(conn, "alice", "2026-11-29", "recluster", "vectors contain NaN", run_key=manual)
        # Later, but one stage started by hand is no whole dream; nor is bob's.
        start_run(conn, "alice", "2026-11-30", "graph", {"trigger": "manual"}, run_key="task-8")
        start_run(conn, "bob", "2026-11-30", "scan", {"trigger": "nightly"}, run_key=NIGHTLY)
        conn.execute(
            update(DreamRun).where(DreamRun.status == "running", DreamRun.run_key == manual).values(status="done")
        )
    last = service.status("alice").last_dream
    assert [(r.day, r.run_key, r.stage, r.status) for r in last] == [
        ("2026-11-29", manual, "scan", "done"),
        ("2026-11-29", manual, "solidify", "done"),
        ("2026-11-29", manual, "refresh", "done"),
        ("2026-11-29", manual, "recluster", "failed"),
    ]
    assert last[-1].error == "vectors contain NaN" and last[0].trigger == "manual"
