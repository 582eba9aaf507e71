"""A person's corrections to a memory: a new version, a supersession, a restore; each recorded, each undoable.

Each change is a plan applied exactly as a dream stage's is, in one transaction with its record in
`dream_runs` (stage "edit", "supersede" or "restore", started by a person): the dream log lists it,
its diff shows every row before and after, and `dream_undo` restores them. A new version is a new
narrative that supersedes the old one, so what was remembered before stays readable by its id.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from tideline_core.domain.inputs import NarrativeIn, explain_validation
from tideline_core.domain.records import NarrativeRecord
from tideline_core.dream.contract import StageOutput
from tideline_core.errors import Conflict, InvalidInput, NotFound
from tideline_core.service.base import ServiceParts
from tideline_core.store.narratives import load_narratives

if TYPE_CHECKING:
    from tideline_core.dream.plan import Plan

# What a person may change in a new version: every field the agent writes, but the links to its turns.
EDITABLE = tuple(name for name in NarrativeIn.model_fields if name != "source_links")
PERSON = "person"


@dataclass(frozen=True)
class EditOutcome:
    run_id: int  # the run that recorded it: `dream_undo` of it restores what was
    narrative_id: int  # the memory as it now stands (a new version's id, or the memory itself)


def _as_input(memory: NarrativeRecord) -> dict[str, Any]:
    return {
        **{name: getattr(memory, name) for name in EDITABLE},
        "tags": list(memory.tags),
        "related_entities": list(memory.related_entities),
        "source_links": list(memory.source_links),
    }


def new_version(memory: NarrativeRecord, changes: Mapping[str, Any]) -> NarrativeIn:
    """The memory with `changes` made, validated as a write is; InvalidInput naming the field and the rule."""
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise InvalidInput(unknown[0], f"cannot be edited; the fields that can are {', '.join(EDITABLE)}")
    current = _as_input(memory)
    try:
        before = NarrativeIn.model_validate(current)
        after = NarrativeIn.model_validate({**current, **changes})
    except ValidationError as exc:
        raise explain_validation(exc) from exc
    if after == before:
        raise InvalidInput("changes", "change nothing: every field given is as the memory already has it")
    return after


class EditOps(ServiceParts):
    def edit_memory(self, agent_id: str, narrative_id: int, changes: Mapping[str, Any]) -> EditOutcome:
        """Keep the memory with `changes` made as a new version that supersedes it; its embedding is queued."""
        from tideline_core.dream.plan import AddNarrative, Plan

        def plan(conn: Any, memory: NarrativeRecord) -> Plan:
            self._current(memory, "edited")
            return Plan((AddNarrative(new_version(memory, changes), memory.origin, supersedes=(memory.id,)),))

        outcome = self._record(agent_id, narrative_id, "edit", plan)
        self.jobs.embed(agent_id)
        return outcome

    def supersede_memory(self, agent_id: str, narrative_id: int, by: int) -> EditOutcome:
        """Mark the memory replaced by memory `by`: search and injection show `by` instead; it stays readable."""
        from tideline_core.dream.plan import Plan, Supersede

        def plan(conn: Any, memory: NarrativeRecord) -> Plan:
            self._current(memory, "superseded")
            if by == memory.id:
                raise InvalidInput("by", "a memory cannot supersede itself")
            found = load_narratives(conn, agent_id, [by])
            if by not in found:
                raise InvalidInput("by", f"memory {by} does not exist for this agent")
            if found[by].superseded_by is not None:
                raise InvalidInput(
                    "by", f"memory {by} is itself superseded by #{found[by].superseded_by}; name that one"
                )
            return Plan((Supersede(memory.id, by),))

        outcome = self._record(agent_id, narrative_id, "supersede", plan, by=by)
        return EditOutcome(outcome.run_id, by)

    def restore_memory(self, agent_id: str, narrative_id: int) -> EditOutcome:
        """Make a superseded memory current again (the one that superseded it stays current too)."""
        from tideline_core.dream.plan import Plan, Restore

        def plan(conn: Any, memory: NarrativeRecord) -> Plan:
            if memory.superseded_by is None:
                raise Conflict(f"memory {memory.id} is not superseded: it is current already")
            return Plan((Restore(memory.id),))

        return self._record(agent_id, narrative_id, "restore", plan)

    @staticmethod
    def _current(memory: NarrativeRecord, verb: str) -> None:
        if memory.superseded_by is not None:
            raise Conflict(
                f"memory {memory.id} was superseded by #{memory.superseded_by}: only the current version can be {verb}"
            )

    def _record(self, agent_id: str, narrative_id: int, stage: str, plan: Any, **inputs: Any) -> EditOutcome:
        from tideline_core.dream.runner.changes import apply_plan
        from tideline_core.dream.runner.runs import day_of, finish_run, start_run

        day, key = day_of(), f"{PERSON}:{uuid.uuid4().hex}"
        with self.db.write() as conn:
            found = load_narratives(conn, agent_id, [narrative_id])
            if narrative_id not in found:
                raise NotFound(f"memory {narrative_id} does not exist for agent {agent_id}")
            made = plan(conn, found[narrative_id])
            start_run(
                conn, agent_id, day, stage, {"trigger": PERSON, "narrative_id": narrative_id, **inputs}, run_key=key
            )
            changes = apply_plan(conn, agent_id, made)
            run_id = finish_run(
                conn, agent_id, day, stage, key, StageOutput({"narrative_id": narrative_id}), changes, (0, 0)
            )
        written = [c.key["id"] for c in changes if c.action == "insert" and c.target == "narratives"]
        return EditOutcome(run_id, int(written[0]) if written else narrative_id)
