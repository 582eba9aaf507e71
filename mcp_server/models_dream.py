"""Structured results of the dream log: runs, and one run's changes (its reviewable diff)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mcp_server.models import DreamRun, Result


class DreamChange(Result):
    action: Literal["insert", "update"]
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


class TriggerResult(Result):
    agent: str
    job: str
    task_id: str = Field(description="the Celery task id (shown in Flower); memory_dream_log lists the stage's run")
    dry_run: bool = Field(default=False, description="true: the stage computes its changes and writes nothing")
    queue: Literal["dream"] = "dream"
