"""Validated read arguments the core has no model for (recall, timeline, profile/thread reads)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator

from tideline_core.errors import InvalidInput
from tideline_core.inputs import MAX_TAG, MAX_TAGS, NarrativeType, ProfileKind, SelfConceptKind, ThreadStatus
from tideline_core.timeutil import parse_instant


class _Query(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def _instant(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("must be an ISO-8601 date or date-time string")
    try:
        return parse_instant(value, "date")
    except InvalidInput as exc:
        raise ValueError(exc.rule) from None


class RecallQuery(_Query):
    limit: StrictInt = Field(default=10, ge=1, le=100)
    narrative_type: NarrativeType | None = None
    tags: list[Annotated[str, Field(min_length=1, max_length=MAX_TAG)]] = Field(
        default_factory=list, max_length=MAX_TAGS
    )
    since: datetime | None = None
    until: datetime | None = None
    order: Literal["recent", "weight"] = "recent"

    @field_validator("since", "until", mode="before")
    @classmethod
    def _bounds(cls, value: Any) -> datetime | None:
        return _instant(value)


class TimelineQuery(_Query):
    session_id: str = Field(default="", max_length=256)
    limit: StrictInt = Field(default=50, ge=1, le=500)
    since: datetime | None = None
    until: datetime | None = None

    @field_validator("since", "until", mode="before")
    @classmethod
    def _bounds(cls, value: Any) -> datetime | None:
        return _instant(value)


class ProfilesQuery(_Query):
    entity: str | None = Field(default=None, max_length=128)
    kind: ProfileKind | None = None
    with_history: StrictBool = False


class SelfConceptQuery(_Query):
    kind: SelfConceptKind | None = None
    with_history: StrictBool = False


class ThreadsQuery(_Query):
    status: ThreadStatus | None = None
    limit: StrictInt = Field(default=20, ge=1, le=100)


class SnapshotQuery(_Query):
    limit: StrictInt = Field(default=1, ge=1, le=50)


# --- the script layer's reads and the manual trigger (mcp_server/tools/organize.py) ---------------

TriggerJob = Literal["recluster", "refresh", "graph", "scan"]


class GraphQuery(_Query):
    entity: str | None = Field(default=None, min_length=1, max_length=128)
    other: str | None = Field(default=None, min_length=1, max_length=128)
    top: StrictInt = Field(default=20, ge=1, le=200)


class HeatmapQuery(_Query):
    days: StrictInt = Field(default=7, ge=1, le=365)


class SoftClustersQuery(_Query):
    label: StrictInt | None = Field(default=None, ge=0)
    query: str | None = Field(default=None, min_length=1, max_length=2000)
    limit: StrictInt = Field(default=20, ge=1, le=200)


class TopicsQuery(_Query):
    limit: StrictInt = Field(default=25, ge=1, le=200)
    sample: StrictInt = Field(default=3, ge=0, le=20)


class TriggerQuery(_Query):
    job: TriggerJob
