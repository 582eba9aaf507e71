"""Validated inputs (pydantic, the boundary): writes, searches and reads; every rule names its field."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tideline_core.domain.choices import TURN_ROLES
from tideline_core.errors import InvalidInput
from tideline_core.text.dates import parse_instant

# Size limits, documented in docs/memory-rules.md: generous for prose, bounded so one call cannot flood memory.
MAX_GESTURE = 2_000
MAX_FIELD = 20_000
MAX_TURN = 100_000
MAX_TAGS = 32
MAX_TAG = 64
MAX_LIST = 64
MAX_METADATA_BYTES = 16_384
MAX_QUERY = 2_000
MAX_CONVERSATION = 20
MAX_LINE = 2_000

# The rule a required text breaks when it is empty or only whitespace (text is stripped first).
BLANK = "must not be empty or only whitespace"

# Row ids are 32-bit integers on PostgreSQL: a larger one is refused here, the same on every backend.
MAX_ID = 2**31 - 1

Score = Annotated[StrictInt, Field(ge=1, le=5)]
RowId = Annotated[StrictInt, Field(ge=1, le=MAX_ID)]
NarrativeType = Literal["event", "reflection", "insight", "decision", "dream", "digest", "other"]
TurnRole = Literal["user", "assistant", "system", "tool"]
ProfileKind = Literal["fact", "impression", "relationship", "self", "contact"]
SelfConceptKind = Literal["fact", "terrain", "reflection"]
ThreadStatus = Literal["open", "exploring", "resolved", "dropped"]
SearchMode = Literal["hybrid", "keyword", "dense"]
SearchKind = Literal["all", "narratives", "context"]


def _no_nul(value: Any) -> Any:
    """Refuse the NUL character anywhere in a value: PostgreSQL cannot store it in text, SQLite would."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("must not contain the NUL character (\\x00)")
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_nul(key)
            _no_nul(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _no_nul(item)
    return value


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, defer_build=True)

    @field_validator("*", mode="before")
    @classmethod
    def _text_without_nul(cls, value: Any) -> Any:
        return _no_nul(value)


def _instant(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str | datetime):
        raise ValueError("must be an ISO-8601 date or date-time string")
    try:
        return parse_instant(value, "date")
    except InvalidInput as exc:
        raise ValueError(exc.rule) from None


# A date or date-time as ISO-8601 text (or a datetime), made timezone-aware UTC; empty means none.
Instant = Annotated[datetime | None, BeforeValidator(_instant)]


class NarrativeIn(_Input):
    gesture: str = Field(min_length=1, max_length=MAX_GESTURE)
    context: str = Field(default="", max_length=MAX_FIELD)
    moment: str = Field(default="", max_length=MAX_FIELD)
    cognition_direction: str = Field(default="", max_length=MAX_FIELD)
    importance: Score = 3
    emotional: Score = 3
    unresolved: Score = 3
    tags: list[Annotated[str, Field(min_length=1, max_length=MAX_TAG)]] = Field(
        default_factory=list, max_length=MAX_TAGS
    )
    entities_role: str = Field(default="", max_length=MAX_GESTURE)
    related_entities: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list, max_length=MAX_LIST
    )
    source_links: list[RowId] = Field(default_factory=list, max_length=MAX_LIST)
    narrative_type: NarrativeType = "event"
    occurred_at: Instant = None

    @field_validator("tags", mode="after")
    @classmethod
    def _distinct_tags(cls, tags: list[str]) -> list[str]:
        # Tags are matched exactly; keep the text as written (Chinese stays Chinese), only trim and dedupe.
        return list(dict.fromkeys(t.strip() for t in tags if t.strip()))


class ContextTurnIn(_Input):
    role: TurnRole
    content: str = Field(min_length=1, max_length=MAX_TURN)
    session_id: str = Field(default="", max_length=256)
    speaker: str = Field(default="", max_length=128)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: Instant = None

    @field_validator("metadata", mode="after")
    @classmethod
    def _small_json(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            size = len(json.dumps(value, ensure_ascii=False).encode())
        except (TypeError, ValueError):
            raise ValueError("must be a JSON object of plain values") from None
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"must be at most {MAX_METADATA_BYTES} bytes as JSON, got {size}")
        return value


class AmendmentIn(_Input):
    narrative_id: RowId
    note: str = Field(min_length=1, max_length=MAX_FIELD)


class ProfileIn(_Input):
    entity: str = Field(min_length=1, max_length=128)
    kind: ProfileKind
    content: str = Field(min_length=1, max_length=MAX_FIELD)
    pinned: StrictBool | None = None  # None: a new entry is not pinned, a rewritten one keeps its pin


class SelfConceptIn(_Input):
    kind: SelfConceptKind
    key: str = Field(default="main", min_length=1, max_length=128)
    content: str = Field(min_length=1, max_length=MAX_FIELD)


class ThreadIn(_Input):
    """A new thread (no `thread_id`; `title` needed), or an update of one: what is left out keeps its value."""

    # `thread_id` comes first so the title's check below can see it.
    thread_id: RowId | None = None
    title: str | None = Field(default=None, min_length=1, max_length=MAX_GESTURE, validate_default=True)
    content: str | None = Field(default=None, max_length=MAX_FIELD)
    status: ThreadStatus | None = None
    priority: Score | None = None

    @field_validator("title", mode="after")
    @classmethod
    def _title_opens_a_thread(cls, title: str | None, info: ValidationInfo) -> str | None:
        if title is None and info.data.get("thread_id") is None:
            raise ValueError("is required to open a thread (give thread_id to update one)")
        return title


class SnapshotIn(_Input):
    content: str = Field(min_length=1, max_length=MAX_FIELD)
    mood: str = Field(default="", max_length=128)


MAX_KEY = 128


class WriteKey(_Input):
    """The optional idempotency key of a write: the same key again returns the first result and stores nothing."""

    idempotency_key: str | None = Field(default=None, min_length=1, max_length=MAX_KEY)

    @field_validator("idempotency_key", mode="after")
    @classmethod
    def _visible_ascii(cls, key: str | None) -> str | None:
        if key is not None and not all("!" <= c <= "~" for c in key):
            raise ValueError(
                "must be visible ASCII characters only: letters, digits, punctuation, no spaces (a UUID works)"
            )
        return key


class ConversationLine(_Input):
    """One recent line of a dialogue used as a query; `role: "assistant"` is accepted for is_self."""

    speaker: str = Field(default="", max_length=128)
    text: str = Field(min_length=1, max_length=MAX_LINE)
    is_self: StrictBool = False

    @model_validator(mode="before")
    @classmethod
    def _role(cls, value: Any) -> Any:
        if isinstance(value, dict) and "role" in value:
            value = dict(value)
            role = value.pop("role")
            if role not in TURN_ROLES:
                raise ValueError(f"role must be one of {', '.join(TURN_ROLES)}, got {role!r}")
            value.setdefault("is_self", role == "assistant")
        return value


def _query_or_lines(value: str, info: ValidationInfo) -> str:
    """A query, unless the conversation's recent lines stand in for it."""
    # A conversation that failed its own rules is reported as such, not as a missing query too.
    if not value and "conversation" in info.data and not info.data["conversation"]:
        raise ValueError(f"{BLANK} (or give the recent lines of the conversation)")
    return value


class SearchIn(_Input):
    # `conversation` comes first so the query's check below can see it.
    conversation: list[ConversationLine] = Field(default_factory=list, max_length=MAX_CONVERSATION)
    query: str = Field(default="", max_length=MAX_QUERY, validate_default=True)
    limit: StrictInt = Field(default=10, ge=1, le=100)
    kinds: SearchKind = "all"
    mode: SearchMode = "hybrid"
    since: Instant = None
    until: Instant = None

    _something_to_find = field_validator("query", mode="after")(_query_or_lines)


MIN_BUDGET, MAX_BUDGET = 100, 32_000
Budget = Annotated[StrictInt, Field(ge=MIN_BUDGET, le=MAX_BUDGET)]


class InjectIn(_Input):
    """The session-start block: for which session (so later turns do not repeat it), within how many tokens."""

    session_id: str = Field(default="", max_length=256)
    budget: Budget | None = None


class PrefetchIn(_Input):
    """The per-turn block: a question and/or the conversation's recent lines, as for a search."""

    conversation: list[ConversationLine] = Field(default_factory=list, max_length=MAX_CONVERSATION)
    query: str = Field(default="", max_length=MAX_QUERY, validate_default=True)
    session_id: str = Field(default="", max_length=256)
    budget: Budget | None = None

    _something_to_recall = field_validator("query", mode="after")(_query_or_lines)


# --- reads ---------------------------------------------------------------------------------


class RecallQuery(_Input):
    limit: StrictInt = Field(default=10, ge=1, le=100)
    narrative_type: NarrativeType | None = None
    tags: list[Annotated[str, Field(min_length=1, max_length=MAX_TAG)]] = Field(
        default_factory=list, max_length=MAX_TAGS
    )
    since: Instant = None
    until: Instant = None
    order: Literal["recent", "weight"] = "recent"


class TimelineQuery(_Input):
    session_id: str = Field(default="", max_length=256)
    limit: StrictInt = Field(default=50, ge=1, le=500)
    since: Instant = None
    until: Instant = None


class ProfilesQuery(_Input):
    entity: str | None = Field(default=None, max_length=128)
    kind: ProfileKind | None = None
    with_history: StrictBool = False


class SelfConceptQuery(_Input):
    kind: SelfConceptKind | None = None
    with_history: StrictBool = False


class ThreadsQuery(_Input):
    status: ThreadStatus | None = None
    limit: StrictInt = Field(default=20, ge=1, le=100)


class SnapshotQuery(_Input):
    limit: StrictInt = Field(default=1, ge=1, le=50)


class GraphQuery(_Input):
    entity: str | None = Field(default=None, min_length=1, max_length=128)
    other: str | None = Field(default=None, min_length=1, max_length=128)
    top: StrictInt = Field(default=20, ge=1, le=200)

    @field_validator("other", mode="after")
    @classmethod
    def _pair_needs_entity(cls, other: str | None, info: ValidationInfo) -> str | None:
        if other is not None and info.data.get("entity") is None:
            raise ValueError("needs `entity` too: give both to see how two entities relate")
        return other


class HeatmapQuery(_Input):
    days: StrictInt = Field(default=7, ge=1, le=365)


MAX_TRIGGER_WAIT = 300  # seconds a caller may wait for a stage's result


class TriggerIn(_Input):
    job: str = Field(min_length=1, max_length=32)
    dry_run: StrictBool = False
    wait: StrictInt | None = Field(default=None, ge=0, le=MAX_TRIGGER_WAIT)  # seconds; None: a dry run's default


class DreamLogQuery(_Input):
    limit: StrictInt = Field(default=20, ge=1, le=200)
    stage: str | None = Field(default=None, min_length=1, max_length=32)
    run_id: RowId | None = None  # one run, with every change it applied


class SoftClustersQuery(_Input):
    label: StrictInt | None = Field(default=None, ge=0, le=MAX_ID)
    query: str | None = Field(default=None, min_length=1, max_length=2000)
    limit: StrictInt = Field(default=20, ge=1, le=200)


class TopicsQuery(_Input):
    limit: StrictInt = Field(default=25, ge=1, le=200)
    sample: StrictInt = Field(default=3, ge=0, le=20)


ModelT = TypeVar("ModelT", bound=BaseModel)


def explain_validation(exc: ValidationError, names: Mapping[str, str] | None = None) -> InvalidInput:
    """Every pydantic error as one InvalidInput naming the first field and, per field, each rule broken.

    `names` renames model fields to what the caller calls them (a tool's `recent_turns` is the
    model's `conversation`). Items of a list are named by position: `tags: item 0 must be a string`.
    """
    rename = names or {}
    by_field: dict[str, list[str]] = {}
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        field = rename.get(loc[0], loc[0]) if loc else "input"
        where = " ".join(f"item {part}" if part.isdigit() else part for part in loc[1:])
        message = _rule(error)
        by_field.setdefault(field, []).append(f"{where}: {message}" if where else message)
    (first, rules), *others = by_field.items()
    rule = "; ".join(rules)
    if others:
        rule += "; " + "; ".join(f"{field}: {'; '.join(more)}" for field, more in others)
    return InvalidInput(first, rule)


def _rule(error: Any) -> str:
    # Text is stripped before its length is checked: "   " breaks the same rule as "", and
    # "at least 1 character" would puzzle a caller who sent three.
    if error["type"] == "string_too_short" and error.get("ctx", {}).get("min_length") == 1:
        return BLANK
    return str(error["msg"]).removeprefix("Value error, ")


def parse(model: type[ModelT], data: dict[str, Any], names: Mapping[str, str] | None = None) -> ModelT:
    """Validate `data` as `model`, raising InvalidInput (never a bare pydantic error); see `explain_validation`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise explain_validation(exc, names) from None
