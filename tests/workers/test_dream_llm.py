"""The LLM dream stages through a real worker and Redis, against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from dream_helpers import dump, embedded, record_day
from dream_helpers import plausible_answer as answers
from llm_server import ScriptedLLM, prompt_name
from sqlalchemy import select

from tideline_core.compose import compose
from tideline_core.dream import nightly_stages
from tideline_core.dream.runner.runs import DreamRunRecord, recent_runs
from tideline_core.service import Service
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.schema import Narrative, NarrativeTag, Thread
from workers import locks
from workers.queues import TaskName, stage_task

TIMEOUT = 120


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def settings(make_settings: Callable[..., Settings], llm: ScriptedLLM) -> Settings:
    return make_settings(llm_url=llm.url, llm_model="scripted", llm_max_attempts=1)


@pytest.fixture
def service(settings: Settings, database: Database, celery_jobs: Any) -> Iterator[Service]:
    built = compose(settings, jobs=celery_jobs, database=database)
    yield built


def runs(db: Database, agent: str = "alice") -> dict[str, DreamRunRecord]:
    with db.read() as conn:
        return {r.stage: r for r in reversed(recent_runs(conn, agent, 50))}


def narratives(db: Database) -> list[Any]:
    with db.read() as conn:
        return list(conn.execute(select(Narrative.__table__).order_by(Narrative.id)))


def chain_over(db: Database, redis_client: Any, stages: int) -> Callable[[], bool]:
    def done() -> bool:
        finished = [r for r in runs(db).values() if r.status in ("done", "skipped", "failed")]
        return locks.holder(redis_client, "alice") is None and len(finished) >= stages

    return done


def test_the_nightly_chain_digests_the_day_through_every_llm_stage_and_records_what_each_applied(
    service: Service,
    database: Database,
    celery_app: Any,
    celery_worker: Any,
    llm: ScriptedLLM,
    redis_client: Any,
    wait_until: Any,
) -> None:
    record_day(service, "alice")
    llm.default(answers)
    started = celery_app.send_task(str(TaskName.NIGHTLY), kwargs={"agent_id": "alice"}).get(timeout=TIMEOUT)
    assert started["started"] and started["run_key"] == "nightly"
    wait_until(chain_over(database, redis_client, len(nightly_stages())), timeout=TIMEOUT, message="the chain")

    done = runs(database)
    assert sorted(done, key=lambda s: done[s].started_at) == [s.name for s in nightly_stages()]
    assert all(r.status == "done" for r in done.values()), {s: (r.status, r.error) for s, r in done.items()}
    assert (done["solidify"].outputs["memories"], done["solidify"].outputs["digests"]) == (4, 2)
    assert done["comb"].outputs["reweighed"] == 1 and done["drift"].outputs["wrote"] == "insight"
    assert all(done[s].tokens_in > 0 for s in ("solidify", "comb", "drift", "symbolic"))
    rows = narratives(database)
    kinds = [n.narrative_type for n in rows]
    assert kinds.count("digest") == 2 and kinds.count("insight") == 1 and kinds.count("dream") == 1
    dream = next(n for n in rows if n.narrative_type == "dream")
    with database.read() as conn:
        dream_tags = set(conn.execute(select(NarrativeTag.tag).where(NarrativeTag.narrative_id == dream.id)).scalars())
        threads = list(conn.execute(select(Thread.title, Thread.source)))
    assert dream.importance == 1 and {"dream", "train", "forum", "audit"} <= dream_tags
    assert threads == [("Is the audit on time?", "dream")]
    assert max(n.importance for n in rows if n.origin == "llm" and n.narrative_type == "event") == 5
    # The prompts the LLM got: one per chunk and session, then one each for comb, drift and the dream.
    assert sorted(prompt_name(r) for r in llm.requests) == sorted(
        ["solidify", "solidify", "digest", "digest", "comb", "drift", "dream"]
    )


def test_a_stage_failing_on_invalid_answers_stops_the_chain_applies_nothing_and_frees_the_lock(
    service: Service,
    database: Database,
    celery_app: Any,
    celery_worker: Any,
    llm: ScriptedLLM,
    redis_client: Any,
    wait_until: Any,
) -> None:
    record_day(service, "alice")
    llm.default(answers)
    llm.by_prompt("comb", "{ not json")  # invalid, and invalid again after the repair
    celery_app.send_task(str(TaskName.NIGHTLY), kwargs={"agent_id": "alice"}).get(timeout=TIMEOUT)
    wait_until(chain_over(database, redis_client, 6), timeout=TIMEOUT, message="the chain stopped at comb")
    done = runs(database)
    assert done["comb"].status == "failed" and "LLMOutputInvalid" in done["comb"].error
    assert "drift" not in done and "symbolic" not in done
    assert all(done[s].status == "done" for s in ("scan", "solidify", "refresh", "recluster", "graph"))
    with database.read() as conn:
        assert list(conn.execute(select(Thread.id))) == []  # nothing of comb's plan


def test_a_dry_run_writes_nothing_and_a_second_nightly_chain_the_same_day_applies_nothing_twice(
    service: Service, database: Database, celery_app: Any, celery_worker: Any, llm: ScriptedLLM, wait_until: Any
) -> None:
    record_day(service, "alice")
    llm.default(answers)
    wait_until(lambda: embedded(database), timeout=TIMEOUT, message="the day embedded")
    before = dump(database)
    dry = celery_app.send_task(stage_task("solidify"), kwargs={"agent_id": "alice", "dry_run": True}).get(
        timeout=TIMEOUT
    )
    assert dry["dry_run"] and dry["changes_total"] == 7 and dump(database) == before
    assert runs(database) == {}

    # The beat firing twice on one day (or its message delivered again): the second chain finds every
    # stage done for the day and applies nothing twice.
    first = celery_app.send_task(str(TaskName.NIGHTLY), kwargs={"agent_id": "alice"}).get(timeout=TIMEOUT)
    celery_app.AsyncResult(first["last_task_id"]).get(timeout=TIMEOUT)
    wait_until(lambda: embedded(database), timeout=TIMEOUT, message="the dream's narratives embedded")
    after_first, asked = dump(database), len(llm.requests)
    ids = {stage: run.id for stage, run in runs(database).items()}
    second = celery_app.send_task(str(TaskName.NIGHTLY), kwargs={"agent_id": "alice"}).get(timeout=TIMEOUT)
    celery_app.AsyncResult(second["last_task_id"]).get(timeout=TIMEOUT)
    assert second["started"] and dump(database) == after_first and len(llm.requests) == asked
    assert {stage: run.id for stage, run in runs(database).items()} == ids


def test_a_dream_started_by_hand_runs_every_stage_now_as_manual_runs_even_after_the_nightly_one(
    service: Service,
    database: Database,
    celery_app: Any,
    celery_worker: Any,
    celery_jobs: Any,
    llm: ScriptedLLM,
    redis_client: Any,
    wait_until: Any,
) -> None:
    record_day(service, "alice")
    llm.default(answers)
    nightly = celery_app.send_task(str(TaskName.NIGHTLY), kwargs={"agent_id": "alice"}).get(timeout=TIMEOUT)
    celery_app.AsyncResult(nightly["last_task_id"]).get(timeout=TIMEOUT)
    started = celery_app.AsyncResult(service.trigger("alice", "dream")).get(timeout=TIMEOUT)
    celery_app.AsyncResult(started["last_task_id"]).get(timeout=TIMEOUT)
    with database.read() as conn:
        manual = [r for r in recent_runs(conn, "alice", 50) if r.run_key == started["run_key"]]
    assert started["run_key"].startswith("dream:") and len(manual) == len(nightly_stages())
    assert {r.inputs["trigger"] for r in manual} == {"manual"}
    # Nothing new was said since the night: solidify finds nothing new to digest.
    solidify = next(r for r in manual if r.stage == "solidify")
    assert solidify.outputs["memories"] == 0 and solidify.outputs["digests"] == 0
