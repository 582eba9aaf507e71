"""The dream's record: the `dream_runs` table, its row-level diffs (`dream_changes`), reading them and undo.

A run is keyed (agent, UTC day, stage, run key): the nightly chain's run of a stage uses the key
"nightly", so a stage the chain already finished that day is not run again (a redelivered task, a
second fan-out); a manual run is keyed by its task id, so a redelivered manual task finds its own
row and every manual run keeps its own diff. Running a stage on this record is `running`;
proposals kept for review are `review`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, insert, select, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from tideline_core.dream.contract import StageOutput
from tideline_core.dream.runner.changes import (
    REBUILD,
    RowChange,
    StoredChange,
    key_of,
    rebuilt,
    undo_blockers,
    undo_changes,
)
from tideline_core.errors import Conflict, NotFound
from tideline_core.store.lookup import as_record
from tideline_core.store.schema import DreamChange, DreamRun, Narrative
from tideline_core.text.dates import utcnow

RUNNING, DONE, FAILED, SKIPPED = "running", "done", "failed", "skipped"
PROPOSED, REJECTED = "proposed", "rejected"  # a plan kept for review (`review`), and one a person discarded
UNDONE = "undone"  # a done run whose changes were restored: what its record says, though the row keeps "done"
NIGHTLY = "nightly"
CORRECTIONS = ("edit", "supersede", "restore")  # the stages a person's correction of a memory is filed under
# The run key of a whole dream started by hand is this and the id of the task that started its chain.
WHOLE_DREAM = "dream:"
ERROR_LIMIT = 2_000
INTERRUPTED = "interrupted: no result within the stage's time limit (its worker was killed or lost); run it again"


@dataclass(frozen=True)
class DreamRunRecord:
    id: int
    agent_id: str
    day: str
    stage: str
    status: str  # running, done, undone, skipped or failed
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    error: str
    started_at: datetime
    finished_at: datetime | None
    run_key: str = NIGHTLY
    tokens_in: int = 0
    tokens_out: int = 0
    undone_at: datetime | None = None
    proposal: list[dict[str, Any]] | None = None  # a proposed (or rejected) run's plan, as `plan_json` keeps it

    @property
    def trigger(self) -> str:
        """What started the run: manual or nightly."""
        return str(self.inputs.get("trigger", ""))


def day_of(when: datetime | None = None) -> str:
    """The UTC date a run is filed under (YYYY-MM-DD)."""
    return (when or utcnow()).date().isoformat()


def _upsert(conn: Connection, agent_id: str, day: str, stage: str, run_key: str, values: dict[str, Any]) -> None:
    dialect_insert: Any = sqlite_insert
    if conn.dialect.name != "sqlite":  # only a process on PostgreSQL loads its dialect's module
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        dialect_insert = pg_insert
    statement = dialect_insert(DreamRun).values(agent_id=agent_id, day=day, stage=stage, run_key=run_key, **values)
    conn.execute(statement.on_conflict_do_update(index_elements=["agent_id", "day", "stage", "run_key"], set_=values))


def run_row(conn: Connection, agent_id: str, day: str, stage: str, run_key: str) -> DreamRunRecord | None:
    row = conn.execute(
        select(DreamRun.__table__).where(
            DreamRun.agent_id == agent_id, DreamRun.day == day, DreamRun.stage == stage, DreamRun.run_key == run_key
        )
    ).one_or_none()
    return None if row is None else to_record(row)


def to_record(row: Any) -> DreamRunRecord:
    # Every reader (status, the log, the MCP tools) shows an undone run as undone, not as the "done" it was.
    status = UNDONE if row.undone_at is not None else row.status
    return as_record(DreamRunRecord, row, status=status, inputs=dict(row.inputs or {}), outputs=dict(row.outputs or {}))


def start_run(
    conn: Connection, agent_id: str, day: str, stage: str, inputs: dict[str, Any], run_key: str = NIGHTLY
) -> None:
    """Mark the stage running (clearing the outputs and error of an earlier attempt of this run)."""
    _upsert(
        conn,
        agent_id,
        day,
        stage,
        run_key,
        {
            "status": RUNNING,
            "inputs": inputs,
            "outputs": {},
            "error": "",
            "tokens_in": 0,
            "tokens_out": 0,
            "started_at": utcnow(),
            "finished_at": None,
            "undone_at": None,
            "proposal": None,
        },
    )


def fail_run(
    conn: Connection,
    agent_id: str,
    day: str,
    stage: str,
    error: str,
    run_key: str = NIGHTLY,
    tokens: tuple[int, int] = (0, 0),
) -> None:
    _upsert(
        conn,
        agent_id,
        day,
        stage,
        run_key,
        {
            "status": FAILED,
            "error": error[:ERROR_LIMIT],
            "finished_at": utcnow(),
            "tokens_in": tokens[0],
            "tokens_out": tokens[1],
        },
    )


def finish_run(
    conn: Connection,
    agent_id: str,
    day: str,
    stage: str,
    run_key: str,
    output: StageOutput,
    changes: list[RowChange],
    tokens: tuple[int, int],
    *,
    proposal: list[dict[str, Any]] | None = None,
) -> int:
    """Record the run finished (done, skipped, or proposed when given a `proposal`) with its changes; its id."""
    status = PROPOSED if proposal is not None else SKIPPED if output.skipped else DONE
    outputs = {**output.figures, "changes": len(changes)}
    if proposal is not None:
        outputs["proposed"] = True
    if any(change.action == REBUILD for change in changes):
        outputs["undoable"] = False
    if output.skipped:
        outputs["skipped"] = output.skipped
    if tokens != (0, 0):
        outputs["tokens"] = {"prompt": tokens[0], "completion": tokens[1]}
    _upsert(
        conn,
        agent_id,
        day,
        stage,
        run_key,
        {
            "status": status,
            "outputs": outputs,
            "finished_at": utcnow(),
            "tokens_in": tokens[0],
            "tokens_out": tokens[1],
            "proposal": proposal,
        },
    )
    run = run_row(conn, agent_id, day, stage, run_key)
    assert run is not None
    record_changes(conn, run.id, agent_id, changes)
    return run.id


def record_changes(conn: Connection, run_id: int, agent_id: str, changes: list[RowChange]) -> None:
    """The run's diff: each change in the order made."""
    if changes:
        conn.execute(
            insert(DreamChange),
            [
                {
                    "run_id": run_id,
                    "agent_id": agent_id,
                    "seq": seq,
                    "action": change.action,
                    "target": change.target,
                    "row_key": change.row_key,
                    "before": None if change.before is None else dict(change.before),
                    "after": change.as_dict()["after"],
                    "summary": change.summary,
                }
                for seq, change in enumerate(changes)
            ],
        )


def expire_running(conn: Connection, started_before: datetime) -> int:
    """Mark stages still 'running' that started before `started_before` as failed: their worker is gone.

    A stage cannot outlive its hard time limit, so a row still running past it was left by a killed
    or lost worker; without this it would read 'running' until the stage ran again.
    """
    result = conn.execute(
        update(DreamRun)
        .where(DreamRun.status == RUNNING, DreamRun.started_at < started_before)
        .values(status=FAILED, error=INTERRUPTED, finished_at=utcnow())
    )
    return result.rowcount or 0


def recent_runs(conn: Connection, agent_id: str, limit: int = 10, *, stage: str | None = None) -> list[DreamRunRecord]:
    """The agent's most recently started stages, newest first."""
    query = select(DreamRun.__table__).where(DreamRun.agent_id == agent_id)
    if stage is not None:
        query = query.where(DreamRun.stage == stage)
    rows = conn.execute(query.order_by(DreamRun.started_at.desc(), DreamRun.id.desc()).limit(limit)).all()
    return [to_record(r) for r in rows]


def last_chain(conn: Connection, agent_id: str) -> list[DreamRunRecord]:
    """Every stage run of the agent's latest whole dream (the nightly chain, or one started by hand), in order."""
    whole = (DreamRun.run_key == NIGHTLY) | DreamRun.run_key.startswith(WHOLE_DREAM, autoescape=True)
    latest = conn.execute(
        select(DreamRun.day, DreamRun.run_key)
        .where(DreamRun.agent_id == agent_id, whole)
        .order_by(DreamRun.started_at.desc(), DreamRun.id.desc())
        .limit(1)
    ).first()
    if latest is None:
        return []
    rows = conn.execute(
        select(DreamRun.__table__)
        .where(DreamRun.agent_id == agent_id, DreamRun.day == latest.day, DreamRun.run_key == latest.run_key)
        .order_by(DreamRun.started_at, DreamRun.id)
    ).all()
    return [to_record(r) for r in rows]


def last_done(conn: Connection, agent_id: str, stage: str) -> DreamRunRecord | None:
    """The agent's latest finished (not undone) run of `stage`, if any."""
    row = conn.execute(
        select(DreamRun.__table__)
        .where(
            DreamRun.agent_id == agent_id,
            DreamRun.stage == stage,
            DreamRun.status == DONE,
            DreamRun.undone_at.is_(None),
        )
        .order_by(DreamRun.finished_at.desc(), DreamRun.id.desc())
        .limit(1)
    ).first()
    return None if row is None else to_record(row)


def tokens_spent(conn: Connection, agent_id: str, day: str) -> int:
    """LLM tokens the agent's dream runs filed under `day` have spent (prompt and completion)."""
    spent = conn.execute(
        select(func.coalesce(func.sum(DreamRun.tokens_in + DreamRun.tokens_out), 0)).where(
            DreamRun.agent_id == agent_id, DreamRun.day == day
        )
    ).scalar_one()
    return int(spent)


def agents_with_narratives(conn: Connection) -> list[str]:
    """Every agent that has at least one narrative (the nightly fan-out dreams for these)."""
    return sorted(conn.execute(select(Narrative.agent_id).distinct()).scalars())


# ---- review and undo -------------------------------------------------------------------------------


def run_by_id(conn: Connection, agent_id: str, run_id: int) -> DreamRunRecord:
    row = conn.execute(
        select(DreamRun.__table__).where(DreamRun.id == run_id, DreamRun.agent_id == agent_id)
    ).one_or_none()
    if row is None:
        raise NotFound(f"dream run {run_id} does not exist for agent {agent_id}")
    return to_record(row)


def _stored(row: Any) -> StoredChange:
    return StoredChange(
        id=row.id,
        run_id=row.run_id,
        action=row.action,
        target=row.target,
        row_key=row.row_key,
        key=key_of(row.target, row.after),
        before=row.before,
        after=dict(row.after),
        summary=row.summary,
    )


def run_changes(conn: Connection, run_id: int) -> list[StoredChange]:
    """The changes a run applied, in the order it applied them."""
    rows = conn.execute(select(DreamChange.__table__).where(DreamChange.run_id == run_id).order_by(DreamChange.seq))
    return [_stored(r) for r in rows]


def undo_run(conn: Connection, agent_id: str, run_id: int) -> tuple[DreamRunRecord, int]:
    """Restore the exact state before the run for every row it changed. → (the run, rows restored).

    Conflict, saying why and changing nothing (the run is not marked undone), when it cannot: the run
    is not a finished one, it changed nothing, it rebuilt derived tables whole, or a later run changed
    the same rows or they are no longer as the run left them.
    """
    run = run_by_id(conn, agent_id, run_id)
    if run.undone_at is not None:
        raise Conflict(f"dream run {run_id} was already undone at {run.undone_at.isoformat()}")
    if run.status != DONE:
        raise Conflict(f"dream run {run_id} is {run.status}: only a finished run can be undone")
    changes = run_changes(conn, run_id)
    if not changes:
        raise Conflict(f"dream run {run_id} ({run.stage}) recorded no changes: there is nothing to undo")
    replaced = rebuilt(changes)
    if replaced:
        raise Conflict(
            f"dream run {run_id} ({run.stage}) cannot be undone: it {'; '.join(replaced)}. Those tables are derived "
            f"from the memories and replaced whole, so there is no earlier state to restore; run {run.stage} again "
            "to rebuild them from the memories as they are now."
        )
    later_rows = conn.execute(
        select(DreamChange.__table__)
        .join(DreamRun, DreamRun.id == DreamChange.run_id)
        .where(DreamChange.agent_id == agent_id, DreamChange.id > changes[-1].id)
        .where(DreamChange.run_id != run_id, DreamRun.undone_at.is_(None), DreamChange.action != REBUILD)
        .where(DreamRun.status == DONE)  # a proposal's changes are only shown: they block nothing
    ).all()
    blockers = undo_blockers(conn, agent_id, changes, [_stored(r) for r in later_rows])
    if blockers:
        listed = "; ".join(blockers[:5]) + (f"; and {len(blockers) - 5} more" if len(blockers) > 5 else "")
        raise Conflict(f"dream run {run_id} cannot be undone: {listed}. Undo the later runs first, or leave it.")
    restored = undo_changes(conn, agent_id, changes)
    now = utcnow()
    conn.execute(update(DreamRun).where(DreamRun.id == run_id).values(undone_at=now))
    return dataclasses.replace(run, status=UNDONE, undone_at=now), restored
