"""Running a dream stage on the record: running, then done with its plan applied (or proposed for review), or failed.

What a stage changes in memory (its `Plan`) is applied in the same transaction that marks the run
done, so "done" means applied, exactly once, and a worker killed mid-stage leaves nothing behind
for the re-run to trip over. Under review (`review`), a plan to be reviewed is recorded as a
proposal with the changes it would make instead, and a stage whose proposal waits is skipped.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tideline_core.dream import plan_json
from tideline_core.dream.contract import Stage, StageContext, StageOutput
from tideline_core.dream.runner import review
from tideline_core.dream.runner.changes import RowChange, apply_plan
from tideline_core.dream.runner.runs import (
    DONE,
    NIGHTLY,
    PROPOSED,
    REJECTED,
    SKIPPED,
    UNDONE,
    fail_run,
    finish_run,
    run_row,
    start_run,
    tokens_spent,
)
from tideline_core.errors import BudgetExhausted
from tideline_core.llm.budget import TokenBudget

FINISHED = (DONE, UNDONE, SKIPPED, PROPOSED, REJECTED)  # a run key in one of these is not run again


@dataclass(frozen=True)
class StageRun:
    """What running a stage gave: its output, the changes applied (or that a dry run or a proposal would apply)."""

    output: StageOutput
    changes: tuple[RowChange, ...] = ()
    run_id: int | None = None
    already_done: bool = False  # this run key had finished before: nothing ran again
    dry_run: bool = False
    proposed: bool = False  # kept for review: nothing applied


def run_stage(
    ctx: StageContext,
    stage: Stage,
    agent_id: str,
    day: str,
    inputs: dict[str, Any],
    *,
    run_key: str = NIGHTLY,
    dry_run: bool = False,
) -> StageRun:
    """Run the stage on the record: running, then done with its figures and applied changes (or proposed), or
    failed with the error (re-raised; nothing of its plan applied). A run key already finished is not run again.

    A dry run records nothing: the plan is applied inside a transaction that is rolled back, so the
    changes it returns are exactly those a real run would make now.
    """
    if dry_run:
        return _dry_run(ctx, stage, agent_id, day)
    with ctx.db.write() as conn:
        earlier = run_row(conn, agent_id, day, stage.name, run_key)
        if earlier is not None and earlier.status in FINISHED:
            return StageRun(StageOutput(earlier.outputs), run_id=earlier.id, already_done=True)
        start_run(conn, agent_id, day, stage.name, inputs, run_key)
        spent_today = tokens_spent(conn, agent_id, day)
        pending = review.waiting(conn, agent_id, stage.name) if ctx.review != "off" else []
        if pending:
            why = StageOutput(
                {}, skipped=f"proposal {pending[0].id} of {stage.name} waits for review (tideline dream review)"
            )
            return StageRun(why, run_id=finish_run(conn, agent_id, day, stage.name, run_key, why, [], (0, 0)))
    run_ctx = per_run(ctx, day, spent_today)
    try:
        output = _run(stage, run_ctx, agent_id)
        tokens = _tokens(run_ctx)
        if review.to_review(ctx.review, output.plan, asked_llm=tokens != (0, 0)):
            with ctx.db.read() as conn:
                kept = review.rejected(conn, agent_id, stage.name, output.plan)
            if len(kept) < len(output.plan):  # said, so a figure of what the stage found is not read as applied
                figures = {**output.figures, "rejected_before": len(output.plan) - len(kept)}
                output = dataclasses.replace(output, plan=kept, figures=figures)
            if review.judged(output.plan):
                return _propose(ctx, stage, agent_id, day, run_key, output, tokens)
        with ctx.db.write() as conn:
            changes = apply_plan(conn, agent_id, output.plan)
            run_id = finish_run(conn, agent_id, day, stage.name, run_key, output, changes, tokens)
    except Exception as exc:
        # Recorded, then re-raised: the task still fails (and retries when the error is transient).
        with ctx.db.write() as conn:
            fail_run(conn, agent_id, day, stage.name, f"{type(exc).__name__}: {exc}", run_key, _tokens(run_ctx))
        raise
    return StageRun(output, tuple(changes), run_id)


def _propose(
    ctx: StageContext, stage: Stage, agent_id: str, day: str, run_key: str, output: StageOutput, tokens: tuple[int, int]
) -> StageRun:
    with ctx.db.trial() as conn:
        preview = apply_plan(conn, agent_id, output.plan)
    with ctx.db.write() as conn:
        kept = plan_json.dump(output.plan)
        run_id = finish_run(conn, agent_id, day, stage.name, run_key, output, preview, tokens, proposal=kept)
    return StageRun(output, tuple(preview), run_id, proposed=True)


def _run(stage: Stage, ctx: StageContext, agent_id: str) -> StageOutput:
    try:
        return stage.run(ctx, agent_id)
    except BudgetExhausted as exc:
        # Not a failure of the stage: the agent spent what it may today. Recorded as skipped, saying so,
        # and the chain goes on (later LLM stages skip the same way; deterministic ones still run).
        return StageOutput({}, skipped=str(exc))


def per_run(ctx: StageContext, day: str, spent_today: int) -> StageContext:
    """The context of one run: its day, and the LLM with a fresh token budget for it (what is left of today's)."""
    if ctx.llm is None:
        return dataclasses.replace(ctx, day=day, ask=None)
    from tideline_core.dream.asking import StageLLM  # the answer schemas: loaded by a process that runs a stage

    budget = TokenBudget(run_limit=ctx.llm_run_tokens, day_limit=ctx.llm_day_tokens, day_spent_before=spent_today)
    return dataclasses.replace(ctx, day=day, ask=StageLLM(ctx.llm, budget))


def _tokens(ctx: StageContext) -> tuple[int, int]:
    return (0, 0) if ctx.ask is None else ctx.ask.tokens()


def _dry_run(ctx: StageContext, stage: Stage, agent_id: str, day: str) -> StageRun:
    with ctx.db.read() as conn:
        spent_today = tokens_spent(conn, agent_id, day)
    output = _run(stage, dataclasses.replace(per_run(ctx, day, spent_today), dry_run=True), agent_id)
    with ctx.db.trial() as conn:
        changes = apply_plan(conn, agent_id, output.plan)
    return StageRun(output, tuple(changes), dry_run=True)
