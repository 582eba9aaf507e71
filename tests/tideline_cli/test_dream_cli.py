"""`tideline dream` as real subprocesses beside the in-process worker on one Redis: run, dry run, log, show, undo."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from cli_helpers import tideline
from dream_helpers import checksums, dump, record_day

from tideline_core.compose import compose
from tideline_core.dream import nightly_stages
from tideline_core.dream.runner.runs import NIGHTLY
from tideline_core.settings import Settings
from tideline_core.store.database import Database


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(embedder="none")


DERIVED = ("entity_", "topic_cluster", "emb_cluster")


def memory(tables: dict[str, Any]) -> dict[str, Any]:
    return {name: rows for name, rows in tables.items() if not name.startswith(DERIVED)}


def test_the_dream_runs_from_the_cli_and_a_run_can_be_shown_dry_run_and_undone(
    env: dict[str, str], settings: Settings, database: Database, celery_worker: Any, celery_jobs: Any
) -> None:
    record_day(compose(settings, jobs=celery_jobs, database=database, llm=None), "alice")  # keyword-only: no vectors
    before = dump(database)

    dry = tideline(env, "dream", "--now", "--stage", "solidify", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "solidify: dry run, nothing written" in dry.stdout and "insert scan_watermarks" in dry.stdout
    assert dump(database) == before

    dreamt = tideline(env, "dream", "--now", "--wait", "--json")
    assert dreamt.returncode == 0, dreamt.stderr
    runs = {r["stage"]: r for r in json.loads(dreamt.stdout)}
    assert runs["solidify"]["status"] == "done" and runs["solidify"]["trigger"] == "manual"
    # Each stage is shown as it ends, in the chain's order, on stderr.
    ended = [line.split()[1].rstrip(":") for line in dreamt.stderr.splitlines() if line.startswith("dream ")
             and not line.startswith("dream chain") and ("done" in line or "skipped" in line)]  # fmt: skip
    assert ended == [stage.name for stage in nightly_stages()]
    assert all(r["started_at"].endswith("Z") for r in runs.values())
    assert runs["comb"]["status"] == "skipped" and "no LLM configured" in runs["comb"]["outputs"]["skipped"]

    solidify = runs["solidify"]["run_id"]
    shown = tideline(env, "dream", "show", str(solidify))
    assert shown.returncode == 0 and "insert narratives" in shown.stdout and "(extractive)" in shown.stdout
    # refresh re-weighed what solidify wrote: solidify cannot be undone before it, and says why.
    refused = tideline(env, "dream", "undo", str(solidify))
    assert refused.returncode == 2 and f"changed again by dream run {runs['refresh']['run_id']}" in refused.stderr
    assert tideline(env, "dream", "undo", str(runs["refresh"]["run_id"])).returncode == 0
    undone = tideline(env, "dream", "undo", str(solidify))
    assert undone.returncode == 0 and "changes restored" in undone.stdout
    # The memories are as before the dream; what recluster and graph rebuild from them is rebuilt next time.
    assert memory(dump(database)) == memory(before)


def test_bad_input_to_the_dream_commands_is_refused_naming_what_is_wrong(
    env: dict[str, str], database: Database
) -> None:
    assert "limit" in tideline(env, "dream", "log", "--limit", "0").stderr
    missing = tideline(env, "dream", "show", "99")
    assert missing.returncode == 2 and "dream run 99 does not exist for agent alice" in missing.stderr
    bare = tideline(env, "dream")
    assert bare.returncode == 2 and "say --now" in bare.stderr


def test_undo_restores_what_it_can_refuses_what_it_cannot_saying_why_and_status_shows_each_run_as_it_is(
    env: dict[str, str], settings: Settings, database: Database, celery_worker: Any, celery_jobs: Any
) -> None:
    service = compose(settings, jobs=celery_jobs, database=database, llm=None)
    record_day(service, "alice")
    runs = {
        stage: service.run_stage(stage, "alice", trigger="nightly", task_id=f"t-{stage}", run_key=NIGHTLY)["run_id"]
        for stage in ("scan", "solidify", "refresh", "recluster")
    }
    before = checksums(database)
    dry = tideline(env, "dream", "--now", "--stage", "recluster", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "recluster: dry run, nothing written" in dry.stdout and "rebuild topic_clusters" in dry.stdout
    assert checksums(database) == before

    shown = tideline(env, "dream", "show", str(runs["recluster"]))
    assert "rebuild topic_clusters agent_id=alice: rebuilt the topic clusters whole" in shown.stdout
    rebuilt = tideline(env, "dream", "undo", str(runs["recluster"]))
    assert rebuilt.returncode == 2 and "cannot be undone: it rebuilt the topic clusters whole" in rebuilt.stderr
    assert "run recluster again" in rebuilt.stderr
    nothing = tideline(env, "dream", "undo", str(runs["scan"]))
    assert nothing.returncode == 2 and "recorded no changes: there is nothing to undo" in nothing.stderr
    assert checksums(database) == before  # a refused undo changes nothing, the run's record included
    for stage in ("refresh", "solidify"):
        undone = tideline(env, "dream", "undo", str(runs[stage]))
        assert undone.returncode == 0 and "changes restored" in undone.stdout, undone.stderr

    status = tideline(env, "status")
    assert status.returncode == 0, status.stderr
    for stage, state in (("scan", "done"), ("solidify", "undone"), ("refresh", "undone"), ("recluster", "done")):
        assert f"    {stage}: {state}\n" in status.stdout
    assert "other recent runs" not in status.stdout  # the latest dream's runs are listed once
    shown_json = json.loads(tideline(env, "status", "--json").stdout)
    assert [(s["stage"], s["status"]) for s in shown_json["last_dream"]["stages"]] == [
        ("scan", "done"),
        ("solidify", "undone"),
        ("refresh", "undone"),
        ("recluster", "done"),
    ]
    log = json.loads(tideline(env, "dream", "log", "--json").stdout)
    assert {r["stage"]: r["status"] for r in log} == {
        "scan": "done",
        "solidify": "undone",
        "refresh": "undone",
        "recluster": "done",
    }
