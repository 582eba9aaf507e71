"""The scan's inferred links on the CLI: a dry run writes none, `dream show` lists them, `dream undo` removes them."""

from __future__ import annotations

import json
from typing import Any

from cli_helpers import tideline
from dream_helpers import dump
from links_helpers import inferred_links, load

from tideline_core.compose import compose
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
from tideline_core.store.database import Database


def test_a_dry_run_of_the_scan_writes_no_link_and_a_real_runs_links_are_shown_and_undone(
    env: dict[str, str], settings: Settings, database: Database, celery_worker: Any
) -> None:
    service = compose(settings, jobs=NullJobQueue(), database=database, llm=None)
    load(service)  # embedded here: the worker has nothing left to embed behind the test's back
    before = dump(database)

    dry = tideline(env, "dream", "--now", "--stage", "scan", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "scan: dry run, nothing written" in dry.stdout and "insert narrative_sources" in dry.stdout
    assert "inferred source link" in dry.stdout and "score" in dry.stdout
    assert dump(database) == before and inferred_links(service) == {}

    ran = tideline(env, "dream", "--now", "--stage", "scan", "--wait", "--json")
    assert ran.returncode == 0, ran.stderr
    [run] = json.loads(ran.stdout)
    links = inferred_links(service)
    assert links and run["changes_total"] == sum(len(c) for c in links.values())

    shown = tideline(env, "dream", "show", str(run["run_id"]))
    assert shown.returncode == 0, shown.stderr
    for narrative_id, turns in links.items():
        for turn in turns:
            assert f"inferred source link #{narrative_id} → turn #{turn} (score" in shown.stdout

    undone = tideline(env, "dream", "undo", str(run["run_id"]))
    assert undone.returncode == 0 and f"{run['changes_total']} changes restored" in undone.stdout, undone.stderr
    assert inferred_links(service) == {}
    assert dump(database) == before
