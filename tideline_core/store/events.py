"""Task events (failures and retries) recorded by the workers and shown by `memory_status`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, insert, select

from tideline_core.store.lookup import as_record
from tideline_core.store.schema import TaskEvent
from tideline_core.text.dates import utcnow

KEEP_DAYS = 30


@dataclass(frozen=True)
class TaskEventRecord:
    id: int
    task_name: str
    task_id: str
    agent_id: str
    state: str
    detail: str
    created_at: datetime


def record_task_event(conn: Connection, *, task_name: str, task_id: str, agent_id: str, state: str, detail: str) -> int:
    """Append one event; events older than KEEP_DAYS are dropped on the way (an index range delete)."""
    now = utcnow()
    conn.execute(delete(TaskEvent).where(TaskEvent.created_at < now - timedelta(days=KEEP_DAYS)))
    new_id = conn.execute(
        insert(TaskEvent)
        .values(task_name=task_name, task_id=task_id, agent_id=agent_id, state=state, detail=detail, created_at=now)
        .returning(TaskEvent.id)
    ).scalar_one()
    return int(new_id)


def recent_task_events(conn: Connection, *, limit: int = 10, agent_id: str | None = None) -> list[TaskEventRecord]:
    """Newest first; with `agent_id`, that agent's events and those not tied to any agent."""
    query = select(TaskEvent.__table__)
    if agent_id is not None:
        query = query.where(TaskEvent.agent_id.in_([agent_id, ""]))
    rows = conn.execute(query.order_by(TaskEvent.created_at.desc(), TaskEvent.id.desc()).limit(limit)).all()
    return [as_record(TaskEventRecord, r) for r in rows]
