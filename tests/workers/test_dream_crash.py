"""A dream worker killed mid-stage leaves nothing half-applied; the stage comes back and applies each change once."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dream_helpers import record_day, shown_data
from llm_server import ScriptedLLM
from sqlalchemy import func, select
from worker_processes import kill, start_worker, stop

from tideline_core.compose import compose
from tideline_core.dream.runner.runs import recent_runs
from tideline_core.embedding import NoEmbedder
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.schema import DreamChange, Narrative, NarrativeSource


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(embedder="none")


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def start_dream_worker(settings: Settings, llm: ScriptedLLM, log: Path) -> subprocess.Popen[bytes]:
    return start_worker(
        settings,
        "dream",
        log,
        TIDELINE_EMBEDDER="none",
        TIDELINE_LLM_URL=llm.url,
        TIDELINE_LLM_MODEL="scripted",
        TIDELINE_LLM_MAX_ATTEMPTS="1",
        TIDELINE_VISIBILITY_TIMEOUT="3600",
        TIDELINE_WORKER_LIVENESS_SECONDS="4",
    )


def statuses(database: Database) -> list[str]:
    with database.read() as conn:
        return [r.status for r in recent_runs(conn, "alice")]


def test_a_dream_worker_killed_mid_solidify_applies_nothing_and_the_stage_run_again_applies_each_change_once(
    settings: Settings, database: Database, celery_jobs: Any, llm: ScriptedLLM, tmp_path: Path, wait_until: Any
) -> None:
    service = compose(settings, jobs=celery_jobs, embedder=NoEmbedder(), database=database, llm=None)
    record_day(service, "alice")
    in_flight, release = threading.Event(), threading.Event()
    calls = {"solidify": 0}

    def solidify(body: dict[str, Any]) -> dict[str, Any]:
        calls["solidify"] += 1
        if calls["solidify"] == 2:  # the first chunk answered, the second in flight: the moment to kill
            in_flight.set()
            release.wait(timeout=60)
        turn = shown_data(body)["turns"][0]
        return {"memories": [{"gesture": f"{turn['speaker']}: {turn['text'][:40]}", "source_turns": [turn["id"]]}]}

    llm.by_prompt("solidify", solidify)
    llm.by_prompt("digest", lambda body: {"who": ["Alice"], "what": "A talk."})
    log = tmp_path / "dream-workers.log"
    first = start_dream_worker(settings, llm, log)
    try:
        task_id = service.trigger("alice", "solidify")
        assert in_flight.wait(timeout=60), f"the first worker never asked about the second chunk (log: {log})"
        kill(first)
    finally:
        release.set()
        stop(first)

    def narratives() -> int:
        with database.read() as conn:
            return int(conn.execute(select(func.count()).select_from(Narrative)).scalar_one())

    assert narratives() == 0, "a killed stage applied part of its plan"
    second = start_dream_worker(settings, llm, log)
    try:
        wait_until(
            lambda: statuses(database) == ["done"],
            timeout=60,
            message=f"the killed stage run again to its end (log: {log})",
        )
    finally:
        stop(second)
    with database.read() as conn:
        (run,) = recent_runs(conn, "alice")
        memories = conn.execute(select(Narrative.narrative_type, func.count()).group_by(Narrative.narrative_type))
        per_type = dict(memories.all())
        changes = conn.execute(select(func.count()).select_from(DreamChange)).scalar_one()
        links = conn.execute(select(func.count()).select_from(NarrativeSource)).scalar_one()
    # One memory per chunk and one digest per session, written once, under the task's one run.
    assert run.inputs["task_id"] == task_id and run.run_key == task_id
    assert per_type == {"event": 2, "digest": 2} and changes == 5 and links == 2 + 12
