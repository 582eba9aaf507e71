"""The stage registry: every stage named once, and what is derived from it follows it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tideline_core.dream import STAGES, StageContext, StageOutput, nightly_stages, stage_named
from tideline_core.dream.contract import Stage
from tideline_core.dream.runner.running import run_stage
from tideline_core.dream.runner.runs import recent_runs
from tideline_core.errors import InvalidInput
from tideline_core.store.database import Database


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    database = Database.open(store_url)
    yield database
    database.close()


def test_each_stage_has_one_name_a_summary_and_a_function() -> None:
    names = [stage.name for stage in STAGES]
    assert len(names) == len(set(names)) and all(stage.summary and callable(stage.run) for stage in STAGES)
    assert [stage.name for stage in nightly_stages()] == [
        "scan",
        "solidify",
        "refresh",
        "recluster",
        "graph",
        "comb",
        "drift",
        "symbolic",
    ]
    assert stage_named("graph").run is STAGES[4].run


def test_an_unknown_stage_is_refused_naming_the_field_and_the_stages_there_are() -> None:
    with pytest.raises(InvalidInput) as refused:
        stage_named("entity-graph")
    assert refused.value.field == "job" and all(stage.name in refused.value.rule for stage in STAGES)


def test_the_cli_the_trigger_tool_and_the_nightly_chain_are_derived_from_the_registry() -> None:
    import argparse

    from mcp_server.tools.dream import JOB, TRIGGER_DESCRIPTION
    from tideline_cli.main import build_parser
    from tideline_core.settings import Settings
    from workers.app import create_app
    from workers.pipelines import nightly_chain
    from workers.queues import TaskName, stage_task

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert {stage.name for stage in STAGES} <= set(commands)
    assert JOB["job"]["enum"] == ["dream", *(stage.name for stage in STAGES)]
    # The tool's description stays short (it sits in every agent's context) and lists no stages: the `job`
    # argument's enum is the registry's, and each stage's summary is in the stages reference generated from it
    # (kept current by tests/test_docs_reference.py).
    assert "`job`" not in TRIGGER_DESCRIPTION and "stage" in TRIGGER_DESCRIPTION
    reference = (Path(__file__).resolve().parents[3] / "docs" / "reference" / "dream-stages.md").read_text("utf-8")
    assert all(f"## `{stage.name}`\n\n{stage.summary}" in reference for stage in STAGES)
    app = create_app(Settings(redis_url="redis://127.0.0.1:1/0"))
    chain = nightly_chain(app, "alice", "token", "2026-11-30")
    assert [task.task for task in chain.tasks[:-1]] == [stage_task(stage.name) for stage in nightly_stages()]
    assert chain.tasks[-1].task == str(TaskName.RELEASE_LOCK)
    app.close()


def test_a_stage_is_recorded_running_then_done_with_its_figures_or_failed_with_its_error(db: Database) -> None:
    context = StageContext(db=db, embedder=None)

    def count(ctx: StageContext, agent_id: str) -> StageOutput:
        return StageOutput({"agent": agent_id, "n": 3}, report="# three")

    def explode(ctx: StageContext, agent_id: str) -> StageOutput:
        raise ValueError("the kernel refused")

    output = run_stage(
        context, Stage("count", "count things", count), "alice", "2026-11-30", {"trigger": "manual"}
    ).output
    assert output.figures == {"agent": "alice", "n": 3} and output.report == "# three"
    with pytest.raises(ValueError, match="the kernel refused"):
        run_stage(context, Stage("explode", "fail", explode), "alice", "2026-11-30", {"trigger": "manual"})
    with db.read() as conn:
        runs = {r.stage: r for r in recent_runs(conn, "alice")}
    assert (runs["count"].status, runs["count"].outputs) == ("done", {"agent": "alice", "n": 3, "changes": 0})
    assert runs["explode"].status == "failed" and runs["explode"].error == "ValueError: the kernel refused"
    # Run again under the same key the same day (a redelivered task): nothing runs again, no second row.
    again = run_stage(context, Stage("count", "count things", explode), "alice", "2026-11-30", {"trigger": "nightly"})
    assert again.already_done and again.output.figures["n"] == 3
    with db.read() as conn:
        rows = [r for r in recent_runs(conn, "alice") if r.stage == "count"]
    assert len(rows) == 1 and rows[0].inputs == {"trigger": "manual"}
    # A run under another key (a manual run has its task id) is a run of its own.
    run_stage(
        context, Stage("count", "count things", count), "alice", "2026-11-30", {"trigger": "manual"}, run_key="t-9"
    )
    with db.read() as conn:
        assert len([r for r in recent_runs(conn, "alice") if r.stage == "count"]) == 2
