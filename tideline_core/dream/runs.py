"""Running a dream stage on the record: the `dream_runs` table, one row per (agent, UTC day, stage).

The row is upserted as the stage starts, ends or fails, so a re-run of a stage the same day
updates its row rather than adding one, and a person can see what each stage did and when.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from tideline_core.dream.registry import Stage, StageContext, StageOutput
from tideline_core.store.lookup import as_record
from tideline_core.store.schema import DreamRun, Narrative
from tideline_core.timeutil import utcnow

RUNNING, DONE, FAILED = "running", "done", "failed"
ERROR_LIMIT = 2_000
INTERRUPTED = "interrupted: no result within the stage's time limit (its worker was killed or lost); run it again"


@dataclass(frozen=True)
class DreamRunRecord:
    agent_id: str
    day: str
    stage: str
    status: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    error: str
    started_at: datetime
    finished_at: datetime | None

    @property
    def trigger(self) -> str:
        """What started the run: manual or nightly."""
        return str(self.inputs.get("trigger", ""))


def day_of(when: datetime | None = None) -> str:
    """The UTC date a run is filed under (YYYY-MM-DD)."""
    return (when or utcnow()).date().isoformat()


def _upsert(conn: Connection, agent_id: str, day: str, stage: str, values: dict[str, Any]) -> None:
    # Keyed (agent, day, stage): a re-run of a stage on the same day updates its row, never adds one.
    dialect_insert = sqlite_insert if conn.dialect.name == "sqlite" else pg_insert
    statement = dialect_insert(DreamRun).values(agent_id=agent_id, day=day, stage=stage, **values)
    conn.execute(statement.on_conflict_do_update(index_elements=["agent_id", "day", "stage"], set_=values))


def start_run(conn: Connection, agent_id: str, day: str, stage: str, inputs: dict[str, Any]) -> None:
    """Mark the stage running (clearing the outputs and error of an earlier run that day)."""
    _upsert(
        conn,
        agent_id,
        day,
        stage,
        {
            "status": RUNNING,
            "inputs": inputs,
            "outputs": {},
            "error": "",
            "tokens_in": 0,
            "tokens_out": 0,
            "started_at": utcnow(),
            "finished_at": None,
        },
    )


def finish_run(conn: Connection, agent_id: str, day: str, stage: str, outputs: dict[str, Any]) -> None:
    _upsert(conn, agent_id, day, stage, {"status": DONE, "outputs": outputs, "finished_at": utcnow()})


def fail_run(conn: Connection, agent_id: str, day: str, stage: str, error: str) -> None:
    _upsert(conn, agent_id, day, stage, {"status": FAILED, "error": error[:ERROR_LIMIT], "finished_at": utcnow()})


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


def recent_runs(conn: Connection, agent_id: str, limit: int = 10) -> list[DreamRunRecord]:
    """The agent's most recently started stages, newest first."""
    rows = conn.execute(
        select(DreamRun.__table__)
        .where(DreamRun.agent_id == agent_id)
        .order_by(DreamRun.started_at.desc(), DreamRun.id.desc())
        .limit(limit)
    ).all()
    return [as_record(DreamRunRecord, r, inputs=dict(r.inputs or {}), outputs=dict(r.outputs or {})) for r in rows]


def last_done(conn: Connection, agent_id: str, stage: str) -> DreamRunRecord | None:
    """The agent's latest finished run of `stage`, if any."""
    row = conn.execute(
        select(DreamRun.__table__)
        .where(DreamRun.agent_id == agent_id, DreamRun.stage == stage, DreamRun.status == DONE)
        .order_by(DreamRun.finished_at.desc(), DreamRun.id.desc())
        .limit(1)
    ).first()
    return (
        None
        if row is None
        else as_record(DreamRunRecord, row, inputs=dict(row.inputs or {}), outputs=dict(row.outputs or {}))
    )


def agents_with_narratives(conn: Connection) -> list[str]:
    """Every agent that has at least one narrative (the nightly fan-out dreams for these)."""
    return sorted(conn.execute(select(Narrative.agent_id).distinct()).scalars())


def run_stage(ctx: StageContext, stage: Stage, agent_id: str, day: str, inputs: dict[str, Any]) -> StageOutput:
    """Record the stage running, run it, record it done with its figures, or failed with the error (re-raised)."""
    with ctx.db.write() as conn:
        start_run(conn, agent_id, day, stage.name, inputs)
    try:
        output = stage.run(ctx, agent_id)
    except Exception as exc:
        # Recorded, then re-raised: the task still fails (and retries when the error is transient).
        with ctx.db.write() as conn:
            fail_run(conn, agent_id, day, stage.name, f"{type(exc).__name__}: {exc}")
        raise
    with ctx.db.write() as conn:
        finish_run(conn, agent_id, day, stage.name, output.figures)
    return output
