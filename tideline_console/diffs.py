"""A recorded change as a person reads it: the fields that moved, before → after (plain values in and out)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Bookkeeping columns every change carries: noise in a diff a person reads.
QUIET = frozenset({"updated_at", "created_at", "agent_id", "embedding_state", "embedding", "search_text"})
LONG = 400


@dataclass(frozen=True)
class FieldChange:
    name: str
    before: str
    after: str


def shown(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list | dict | tuple):
        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return text if len(text) <= LONG else text[: LONG - 1] + "…"


def _unfolded(values: Mapping[str, Any]) -> dict[str, Any]:
    rows = {name: value for name, value in values.items() if name != "_with"}
    beside = values.get("_with")
    if isinstance(beside, Mapping):
        rows.update({name.replace("_", " "): value for name, value in beside.items()})
    return rows


def field_changes(action: str, before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[FieldChange]:
    """What a change did, field by field: an update's moved fields, an insert's values, a delete's old values."""
    # What a change wrote beside its row (tags, source links) reads as fields of the row.
    old = _unfolded(before or {})
    new = _unfolded(after or {})
    names: Sequence[str] = list(dict.fromkeys([*old, *new]))
    rows: list[FieldChange] = []
    for name in names:
        if name in QUIET:
            continue
        was, now = old.get(name), new.get(name)
        if action == "update" and was == now:
            continue
        if action == "insert" and now in (None, "", [], {}):
            continue
        rows.append(FieldChange(name, shown(was) if action != "insert" else "", shown(now)))
    return rows
