"""Dream proposals: a stage's plan kept for a person to approve or reject instead of applied (`TIDELINE_DREAM_REVIEW`).

With review on, a run whose plan is to be reviewed (`to_review`: every plan that changes memory,
or only those an LLM answer shaped) is recorded as `proposed`: its plan in `dream_runs.proposal`
and, in `dream_changes`, the changes it would make, computed in a rolled-back transaction as a dry
run computes them; that is what the inbox shows. Approving applies the plan in one transaction as
a run applies its own (recorded, the preview replaced by what was applied, undoable), and is
refused, naming them, when a row the proposal changes is no longer as it was when proposed.
Rejecting keeps the plan, so the stage never proposes the same intent again (`rejected`), and
applies its bookkeeping (the scan watermark) so the stage moves on. While one of a stage's
proposals waits, the stage is skipped, saying so, instead of proposing the same again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from tideline_core.dream import plan_json
from tideline_core.dream.plan import Plan
from tideline_core.dream.runner.changes import RowChange, StoredChange, apply_plan, tracked
from tideline_core.dream.runner.runs import (
    DONE,
    PROPOSED,
    REJECTED,
    DreamRunRecord,
    record_changes,
    run_changes,
    to_record,
)
from tideline_core.errors import Conflict, InvalidInput, NotFound
from tideline_core.store.schema import DreamChange, DreamRun
from tideline_core.text.dates import utcnow

REVIEW_MODES = ("off", "llm", "all")


def to_review(mode: str, plan: Plan, *, asked_llm: bool) -> bool:
    """Whether a run's plan is kept as a proposal under review `mode` (off, llm: plans an LLM answer shaped, all)."""
    if mode == "off" or not plan_json.keepable(plan):
        return False
    return mode == "all" or asked_llm


def waiting(conn: Connection, agent_id: str, stage: str | None = None) -> list[DreamRunRecord]:
    """The agent's proposals still waiting (of `stage`, or of every stage), oldest first."""
    query = select(DreamRun.__table__).where(DreamRun.agent_id == agent_id, DreamRun.status == PROPOSED)
    if stage is not None:
        query = query.where(DreamRun.stage == stage)
    return [to_record(r) for r in conn.execute(query.order_by(DreamRun.finished_at, DreamRun.id))]


def count_waiting(conn: Connection, agent_id: str) -> int:
    """How many of the agent's proposals wait for review."""
    found = conn.execute(
        select(func.count()).select_from(DreamRun).where(DreamRun.agent_id == agent_id, DreamRun.status == PROPOSED)
    )
    return int(found.scalar_one())


def rejected(conn: Connection, agent_id: str, stage: str, plan: Plan) -> Plan:
    """`plan` without the intents a person rejected in an earlier proposal of the stage (bookkeeping kept)."""
    found = conn.execute(
        select(DreamRun.proposal).where(
            DreamRun.agent_id == agent_id, DreamRun.stage == stage, DreamRun.status == REJECTED
        )
    ).scalars()
    refused = {plan_json.fingerprint(item) for items in found for item in items or ()}
    if not refused:
        return plan
    kept = [
        i
        for i in plan.intents
        if plan_json.bookkeeping(i) or plan_json.fingerprint(plan_json.dump_intent(i)) not in refused
    ]
    return Plan(tuple(kept))


def judged(plan: Plan) -> bool:
    """Whether anything in the plan is for a person to judge (more than bookkeeping)."""
    return any(not plan_json.bookkeeping(i) for i in plan.intents)


def approve(conn: Connection, agent_id: str, run_id: int) -> tuple[DreamRunRecord, list[RowChange]]:
    """Apply a waiting proposal as its run would have applied it. → (the run, now done; the changes applied).

    Conflict, changing nothing, when the run is not a waiting proposal, or when a row it changes is
    no longer as it was when proposed (named, with what differs).
    """
    run = _waiting_run(conn, agent_id, run_id, "approved")
    preview = run_changes(conn, run_id)
    try:
        changes = apply_plan(conn, agent_id, plan_json.load(list(run.proposal or ())))
    except InvalidInput as exc:  # a row it names is gone
        raise Conflict(f"dream run {run_id} cannot be approved: {exc}; reject it") from exc
    stale = changed_since(preview, changes)
    if stale:
        listed = "; ".join(stale[:5]) + (f"; and {len(stale) - 5} more" if len(stale) > 5 else "")
        raise Conflict(f"dream run {run_id} cannot be approved: {listed} since it was proposed; reject it")
    conn.execute(delete(DreamChange).where(DreamChange.run_id == run_id))
    record_changes(conn, run_id, agent_id, changes)
    outputs = {**run.outputs, "changes": len(changes), "approved_at": utcnow().isoformat()}
    outputs.pop("proposed", None)
    conn.execute(update(DreamRun).where(DreamRun.id == run_id).values(status=DONE, outputs=outputs))
    return dataclasses.replace(run, status=DONE, outputs=outputs), changes


def reject(conn: Connection, agent_id: str, run_id: int) -> DreamRunRecord:
    """Discard a waiting proposal: its intents are never proposed again; its bookkeeping is applied."""
    run = _waiting_run(conn, agent_id, run_id, "rejected")
    plan = plan_json.load(list(run.proposal or ()))
    apply_plan(conn, agent_id, Plan(tuple(i for i in plan.intents if plan_json.bookkeeping(i))))
    outputs = {**run.outputs, "rejected_at": utcnow().isoformat()}
    outputs.pop("proposed", None)
    conn.execute(update(DreamRun).where(DreamRun.id == run_id).values(status=REJECTED, outputs=outputs))
    return dataclasses.replace(run, status=REJECTED, outputs=outputs)


def _waiting_run(conn: Connection, agent_id: str, run_id: int, verb: str) -> DreamRunRecord:
    # Locked first: two reviewers at once apply it once, the second told it is no longer waiting.
    locked = conn.execute(
        select(DreamRun.__table__).where(DreamRun.id == run_id, DreamRun.agent_id == agent_id).with_for_update()
    ).one_or_none()
    if locked is None:
        raise NotFound(f"dream run {run_id} does not exist for agent {agent_id}")
    run = to_record(locked)
    if run.status != PROPOSED:
        was = {DONE: "was approved", REJECTED: "was rejected"}.get(run.status, f"is {run.status}")
        raise Conflict(f"dream run {run_id} {was}: only a waiting proposal can be {verb}")
    return run


def changed_since(preview: Sequence[StoredChange], applied: Sequence[RowChange]) -> list[str]:
    """The rows whose state before the change differs between the proposal's preview and the change applied now.

    A row the plan inserts has no earlier state (and a new id each time): only rows it changes are compared.
    """
    proposed = _first_states((c.target, c.row_key, c.before) for c in preview)
    now = _first_states((c.target, c.row_key, c.before) for c in applied)
    stale = []
    for key in sorted(set(proposed) | set(now)):
        then, later = proposed.get(key), now.get(key)
        if then is None and later is None:
            continue
        if then != later:
            target, row_key = key
            if then is None:
                stale.append(f"{target} {row_key} was written")
            elif later is None:
                stale.append(f"{target} {row_key} is gone or already as proposed")
            else:
                fields = sorted(k for k in set(then) | set(later) if then.get(k) != later.get(k))
                stale.append(f"{target} {row_key} changed ({', '.join(fields)})")
    return stale


def _first_states(changes: Any) -> dict[tuple[str, str], dict[str, Any] | None]:
    out: dict[tuple[str, str], dict[str, Any] | None] = {}
    for target, row_key, before in changes:
        if (target, row_key) not in out:
            out[(target, row_key)] = tracked(before)
    return out
