"""Structured results of the dream log: runs, and one run's changes (its reviewable diff)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mcp_server.models import DreamRun, Result


class DreamChange(Result):
    action: Literal["insert", "update", "rebuild"] = Field(
        description="rebuild: a derived table (clusters, the entity graph) replaced whole, its counts before and "
        "after; a run that rebuilds cannot be undone"
    )
    target: str = Field(description="the table changed: narratives, profiles, self_concept, threads, ...")
    row: str = Field(description="the row's key, e.g. id=42")
    summary: str = Field(description="the change in words, e.g. 're-weighed #42: 0.600 → 0.720'")
    before: dict[str, Any] | None = Field(description="the row before the run (null: the run inserted it)")
    after: dict[str, Any] = Field(description="the row as the run left it")


class DreamLog(Result):
    agent: str
    runs: list[DreamRun] = Field(description="the latest dream runs, newest first (with run_id: that run alone)")
    changes: list[DreamChange] | None = Field(
        default=None, description="with run_id: every change the run applied, in order; undo restores them all"
    )


class Proposal(Result):
    run: DreamRun
    changes: list[DreamChange] = Field(description="what approving it applies, in order (as it stood when proposed)")


class DreamReview(Result):
    agent: str
    proposals: list[Proposal] = Field(
        description="the proposals waiting, oldest first (after approve or reject: that one)"
    )


# The keys of a stage task's result that are not the stage's own figures.
_NOT_FIGURES = frozenset(
    {
        "agent_id",
        "stage",
        "day",
        "run_id",
        "dry_run",
        "changes",
        "changes_total",
        "already_done",
        "proposed",
        "skipped",
        "markdown",
    }
)


class StageResult(Result):
    stage: str
    run_id: int | None = Field(description="the run in memory_dream_log; null for a dry run (nothing is recorded)")
    dry_run: bool
    changes: list[DreamChange] = Field(description="the changes it applied (a dry run: would apply), in order")
    changes_total: int = Field(description="how many changes; a real run lists its first 50 here")
    figures: dict[str, Any] = Field(description="the stage's counts")
    skipped: str | None = Field(default=None, description="why the stage did nothing")
    already_done: bool = Field(default=False, description="this run had finished before: nothing ran again")
    proposed: bool = Field(default=False, description="kept for review (memory_dream_review): nothing applied yet")
    report: str | None = Field(default=None, description="the stage's report (Markdown), if it has one")

    @classmethod
    def of_task(cls, value: dict[str, Any]) -> StageResult:
        """The result of a stage task (the service's `run_stage`) as a structured result."""
        return cls(
            stage=value["stage"],
            run_id=value.get("run_id"),
            dry_run=bool(value.get("dry_run")),
            changes=[DreamChange.model_validate(c) for c in value.get("changes", [])],
            changes_total=int(value.get("changes_total", 0)),
            figures={k: v for k, v in value.items() if k not in _NOT_FIGURES},
            skipped=value.get("skipped"),
            already_done=bool(value.get("already_done")),
            proposed=bool(value.get("proposed")),
            report=value.get("markdown"),
        )


class TriggerResult(Result):
    agent: str
    job: str
    task_id: str = Field(description="the Celery task id (shown in Flower); memory_dream_log lists the stage's run")
    dry_run: bool = Field(default=False, description="true: the stage computes its changes and writes nothing")
    queue: Literal["dream"] = "dream"
    state: Literal["started", "queued", "running", "retrying", "finished", "failed"] = Field(
        default="started",
        description="started: not waited for; queued, running or retrying: not finished within `wait`; "
        "finished: `result` says what it did; failed: `error` says why",
    )
    result: StageResult | None = None
    error: str | None = None
