"""The dream as an operator sees it: run a stage on the record (or dry), start the dream, read the log, undo a run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tideline_core.dream.registry import stage_named
from tideline_core.errors import BrokerUnavailable, InvalidInput
from tideline_core.service.base import ServiceParts
from tideline_core.service.jobs import TaskResult

if TYPE_CHECKING:
    from tideline_core.dream.runner.changes import RowChange, StoredChange
    from tideline_core.dream.runner.runs import DreamRunRecord

DREAM = "dream"  # the whole nightly chain, as a job of `trigger`
MAX_LOG = 200
CHANGES_IN_RESULT = 50  # a task's result lists this many changes; `dream show` lists them all
DRY_RUN_WAIT = 60.0  # seconds a dry run is waited for when the caller does not say: its changes are its answer


@dataclass(frozen=True)
class DreamRunView:
    run: DreamRunRecord
    changes: tuple[StoredChange, ...]


@dataclass(frozen=True)
class UndoReport:
    run: DreamRunRecord
    restored: int


def change_dict(change: RowChange | StoredChange) -> dict[str, Any]:
    """A change as plain JSON values: what a diff shows."""
    from tideline_core.dream.runner.changes import RowChange

    after = dict(change.as_dict()["after"]) if isinstance(change, RowChange) else dict(change.after)
    return {
        "action": change.action,
        "target": change.target,
        "row": change.row_key,
        "summary": change.summary,
        "before": None if change.before is None else dict(change.before),
        "after": after,
    }


@dataclass(frozen=True)
class Triggered:
    """A job started now and, when it was waited for, where it stands: its result once finished."""

    task_id: str
    outcome: TaskResult | None = None  # None: not waited for, or the queue did not answer the wait


class DreamOps(ServiceParts):
    def run_stage(
        self,
        stage_name: str,
        agent_id: str,
        *,
        day: str | None = None,
        trigger: str,
        task_id: str,
        run_key: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Run a dream stage on the record (`dream_runs`, its changes in `dream_changes`), or dry (nothing written).

        `run_key` "nightly" is the chain's run of the day; a manual run is keyed by its task id. Returns
        the stage's figures, the run id, the changes (all of them for a dry run, the first 50 otherwise)
        and its Markdown report if it has one.
        """
        from tideline_core.dream.runner.running import run_stage
        from tideline_core.dream.runner.runs import NIGHTLY, day_of

        stage = stage_named(stage_name)
        day = day or day_of()
        key = run_key or (NIGHTLY if trigger == "nightly" else task_id)  # a chain always passes its run key
        outcome = run_stage(
            self.stages, stage, agent_id, day, {"trigger": trigger, "task_id": task_id}, run_key=key, dry_run=dry_run
        )
        applied = not dry_run and not outcome.proposed
        if applied and any(c.action == "insert" and c.target == "narratives" for c in outcome.changes):
            self.jobs.embed(agent_id)  # what the dream wrote is searchable by meaning once embedded, as any write
        listed = outcome.changes if dry_run else outcome.changes[:CHANGES_IN_RESULT]
        result: dict[str, Any] = {
            "agent_id": agent_id,
            "stage": stage.name,
            "day": day,
            **outcome.output.figures,
            "run_id": outcome.run_id,
            "dry_run": dry_run,
            "changes": [change_dict(c) for c in listed],
            "changes_total": len(outcome.changes),
        }
        if outcome.already_done:
            result["already_done"] = True
        if outcome.proposed:
            result["proposed"] = True  # kept for review: `dream_review` lists it, approve applies it
        if outcome.output.skipped:
            result["skipped"] = outcome.output.skipped
        if outcome.output.report:
            result["markdown"] = outcome.output.report
        return result

    def trigger(self, agent_id: str, job: str, *, dry_run: bool = False) -> str:
        """Start a dream stage, or the whole dream ("dream": every nightly stage in order), for the agent now.

        Its task id. InvalidInput for a job that does not exist (or a dry run of the whole dream: ask for
        each stage); Conflict while the agent's nightly dream runs; BrokerUnavailable when the job queue
        cannot be reached (nothing was started).
        """
        if job == DREAM:
            if dry_run:
                raise InvalidInput("dry_run", "a dry run is of one stage: name it")
            task_id = self.jobs.start_dream(agent_id)
        else:
            task_id = self.jobs.start_stage(agent_id, stage_named(job, also=(DREAM,)).name, dry_run=dry_run)
        if task_id is None:
            raise BrokerUnavailable("the task queue is unreachable, so nothing was started; try again later")
        return task_id

    def trigger_and_wait(
        self, agent_id: str, job: str, *, dry_run: bool = False, wait: float | None = None
    ) -> Triggered:
        """`trigger`, then wait up to `wait` seconds for the stage's result (its changes, for a dry run).

        Without `wait`, a dry run is waited for up to DRY_RUN_WAIT seconds and a real run not at all.
        Waiting is for one stage: the whole dream's task only starts its chain (InvalidInput).
        """
        if job == DREAM and wait:
            raise InvalidInput("wait", "waiting is for one stage; the whole dream's runs are in the dream log")
        task_id = self.trigger(agent_id, job, dry_run=dry_run)
        seconds = (DRY_RUN_WAIT if dry_run else 0.0) if wait is None else wait
        if seconds <= 0:
            return Triggered(task_id)
        return Triggered(task_id, self.jobs.task_result(task_id, seconds))

    def dream_log(self, agent_id: str, *, limit: int = 20, stage: str | None = None) -> list[DreamRunRecord]:
        """The agent's dream runs, newest first."""
        from tideline_core.dream.runner.runs import CORRECTIONS, recent_runs

        if stage is not None and stage not in CORRECTIONS:
            stage = stage_named(stage, "stage").name  # InvalidInput naming the stages there are
        with self.db.read() as conn:
            return recent_runs(conn, agent_id, max(1, min(limit, MAX_LOG)), stage=stage)

    def dream_run(self, agent_id: str, run_id: int) -> DreamRunView:
        """One run with every change it applied (NotFound for another agent's run)."""
        from tideline_core.dream.runner.runs import run_by_id, run_changes

        with self.db.read() as conn:
            run = run_by_id(conn, agent_id, run_id)
            return DreamRunView(run, tuple(run_changes(conn, run_id)))

    def dream_undo(self, agent_id: str, run_id: int) -> UndoReport:
        """Restore what the run changed to its exact prior state; Conflict (saying why) when that cannot be."""
        from tideline_core.dream.runner.runs import undo_run

        with self.db.write() as conn:
            run, restored = undo_run(conn, agent_id, run_id)
        return UndoReport(run, restored)

    def dream_review(self, agent_id: str) -> list[DreamRunView]:
        """The agent's proposals waiting for review, oldest first, each with the changes it would make."""
        from tideline_core.dream.runner import review
        from tideline_core.dream.runner.runs import run_changes

        with self.db.read() as conn:
            return [DreamRunView(run, tuple(run_changes(conn, run.id))) for run in review.waiting(conn, agent_id)]

    def dream_approve(self, agent_id: str, run_id: int) -> DreamRunView:
        """Apply a waiting proposal as its run would have (recorded, undoable); Conflict, naming why, when it cannot."""
        from tideline_core.dream.runner import review
        from tideline_core.dream.runner.runs import run_changes

        with self.db.write() as conn:
            run, changes = review.approve(conn, agent_id, run_id)
            stored = tuple(run_changes(conn, run_id))
        if any(c.action == "insert" and c.target == "narratives" for c in changes):
            self.jobs.embed(agent_id)
        return DreamRunView(run, stored)

    def dream_reject(self, agent_id: str, run_id: int) -> DreamRunRecord:
        """Discard a waiting proposal: nothing of it is applied, and its stage does not propose the same again."""
        from tideline_core.dream.runner import review

        with self.db.write() as conn:
            return review.reject(conn, agent_id, run_id)
