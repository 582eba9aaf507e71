"""`tideline dream` as real subprocesses beside the in-process worker on one Redis: run, dry run, log, show, undo."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from cli_helpers import tideline
from dream_helpers import dump, record_day

from tideline_core.compose import compose
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
