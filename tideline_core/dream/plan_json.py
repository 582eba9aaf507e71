"""A plan as JSON values and back: what a proposal keeps until a person approves or rejects it.

Only intents that change memory are kept this way; a plan that rebuilds derived tables (clusters,
the entity graph) is never a proposal, since those are replaced whole from the memories as they are.
Each intent is one object: its kind and its fields, the core's input models as their JSON dump.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from pydantic import BaseModel

from tideline_core.domain.inputs import NarrativeIn, ProfileIn, SelfConceptIn, ThreadIn
from tideline_core.dream.plan import (
    AddNarrative,
    AddSourceLink,
    Intent,
    MoveWatermark,
    Plan,
    PutProfile,
    PutSelfConcept,
    PutThread,
    Rebuild,
    Rescore,
    Restore,
    Reweight,
    Supersede,
)

KEPT: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        AddNarrative,
        AddSourceLink,
        MoveWatermark,
        PutProfile,
        PutSelfConcept,
        PutThread,
        Rescore,
        Restore,
        Reweight,
        Supersede,
    )
}
MODELS: dict[str, type[BaseModel]] = {m.__name__: m for m in (NarrativeIn, ProfileIn, SelfConceptIn, ThreadIn)}
KIND, MODEL = "kind", "$model"


def keepable(plan: Plan) -> bool:
    """Whether the plan can be kept as a proposal: it changes memory and rebuilds nothing."""
    return bool(plan.intents) and not any(isinstance(i, Rebuild) for i in plan.intents)


def bookkeeping(intent: Intent) -> bool:
    """An intent that records what a stage has looked at, not a change a person judges (the scan watermark).

    Applied even when its proposal is rejected, so the stage moves on instead of proposing the same again.
    """
    return isinstance(intent, MoveWatermark)


def _value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return {MODEL: type(value).__name__, **value.model_dump(mode="json", exclude_defaults=True)}
    if isinstance(value, tuple):
        return [_value(v) for v in value]
    return value


def dump_intent(intent: Intent) -> dict[str, Any]:
    """One intent as a JSON object."""
    if type(intent).__name__ not in KEPT:
        raise ValueError(f"{type(intent).__name__} is not kept in a proposal")
    fields = {f.name: _value(getattr(intent, f.name)) for f in dataclasses.fields(intent)}
    return {KIND: type(intent).__name__, **fields}


def _loaded(value: Any) -> Any:
    if isinstance(value, dict) and MODEL in value:
        fields = {k: v for k, v in value.items() if k != MODEL}
        return MODELS[value[MODEL]].model_validate(fields)
    if isinstance(value, list):
        return tuple(_loaded(v) for v in value)
    return value


def load_intent(item: dict[str, Any]) -> Intent:
    """The intent `dump_intent` gave."""
    cls = KEPT[item[KIND]]
    intent: Intent = cls(**{k: _loaded(v) for k, v in item.items() if k != KIND})
    return intent


def dump(plan: Plan) -> list[dict[str, Any]]:
    return [dump_intent(i) for i in plan.intents]


def load(items: list[dict[str, Any]]) -> Plan:
    return Plan(tuple(load_intent(item) for item in items))


def fingerprint(item: dict[str, Any]) -> str:
    """What makes a kept intent the same intent again: a digest of its JSON, keys in order."""
    return hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:32]
