"""Validated inputs (pydantic, the boundary): writes, searches and reads; every rule names its field.

Each operation's input is one model here, and each field's description is what a caller reads
about it: the MCP tools, the Hermes functions and the CLI's options publish these fields (see
`schemas`), so an argument is declared once, with its limits, its default and its meaning.
"""

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
    WithJsonSchema,
    field_validator,
    model_validator,
)

from tideline_core.domain.choices import TURN_ROLES, TurnRole
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
Instant = Annotated[datetime | None, BeforeValidator(_instant), WithJsonSchema({"type": "string"})]


def _none_if_empty(value: Any) -> Any:
    return None if value == "" else value


class NarrativeIn(_Input):
    gesture: str = Field(
        min_length=1, max_length=MAX_GESTURE, description="What happened, in one sentence that keeps its tone."
    )
    context: str = Field(default="", max_length=MAX_FIELD, description="Background: what led to it, what was going on.")
    moment: str = Field(
        default="", max_length=MAX_FIELD, description="The concrete moment or detail that made it stick."
    )
    cognition_direction: str = Field(
        default="", max_length=MAX_FIELD, description="Where your thinking went because of it."
    )
    importance: Score = Field(default=3, description="How much it matters.")
    emotional: Score = Field(default=3, description="Emotional intensity.")
    unresolved: Score = Field(default=3, description="How open it still is.")
    tags: list[Annotated[str, Field(min_length=1, max_length=MAX_TAG)]] = Field(
        default_factory=list, max_length=MAX_TAGS, description="Topic tags; tags that recur raise recurrence."
    )
    entities_role: str = Field(
        default="", max_length=MAX_GESTURE, description="Who did what, e.g. 'Alice=judged+executed; Bob=reviewed'."
    )
    related_entities: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list, max_length=MAX_LIST, description="Other people or things involved."
    )
    source_links: list[RowId] = Field(
        default_factory=list, max_length=MAX_LIST, description="Ids of the turns (context_record) it came from."
    )
    narrative_type: NarrativeType = Field(
        default="event", description="What kind of memory (digest: a session's summary)."
    )
    occurred_at: Instant = Field(default=None, description="When it happened (default: now).")

    @field_validator("tags", mode="after")
    @classmethod
    def _distinct_tags(cls, tags: list[str]) -> list[str]:
        # Tags are matched exactly; keep the text as written (Chinese stays Chinese), only trim and dedupe.
        return list(dict.fromkeys(t.strip() for t in tags if t.strip()))


class ContextTurnIn(_Input):
    role: TurnRole = Field(description="Who spoke.")
    content: str = Field(min_length=1, max_length=MAX_TURN, description="The full text of the turn, verbatim.")
    session_id: str = Field(default="", max_length=256, description="The conversation this turn belongs to.")
    speaker: str = Field(default="", max_length=128, description="The speaker's name, if not just the role.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Extra facts about the turn, a JSON object.")
    created_at: Instant = Field(default=None, description="When the turn was said (default: now).")

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
    narrative_id: RowId = Field(description="The id of the memory to annotate (from memory_write or a search).")
    note: str = Field(min_length=1, max_length=MAX_FIELD, description="The correction or afterthought to attach.")


class ProfileIn(_Input):
    entity: str = Field(
        min_length=1, max_length=128, description="Who or what the profile is about, e.g. a person's name or 'self'."
    )
    kind: ProfileKind = Field(description="fact, impression, relationship, self (their view), contact.")
    content: str = Field(
        min_length=1, max_length=MAX_FIELD, description="The whole current text for this entity and kind."
    )
    # None: a new entry is not pinned, a rewritten one keeps its pin.
    pinned: StrictBool | None = Field(
        default=None, description="Always show it at session start (a rewrite keeps its pin unless given)."
    )


class SelfConceptIn(_Input):
    kind: SelfConceptKind = Field(description="fact (true of you), terrain (your inner landscape), reflection.")
    key: str = Field(
        default="main",
        min_length=1,
        max_length=128,
        description="Which entry of that kind to replace (default 'main').",
    )
    content: str = Field(min_length=1, max_length=MAX_FIELD, description="The whole current text of the entry.")


class ThreadIn(_Input):
    """A new thread (no `thread_id`; `title` needed), or an update of one: what is left out keeps its value."""

    # `thread_id` comes first so the title's check below can see it.
    thread_id: RowId | None = Field(
        default=None, description="The id of an existing thread to update; omit to open a new one."
    )
    title: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_GESTURE,
        validate_default=True,
        description="The question or line of thought; required to open a thread.",
    )
    content: str | None = Field(
        default=None, max_length=MAX_FIELD, description="Notes: what you know so far, what to try next."
    )
    status: ThreadStatus | None = Field(default=None, description="open by default for a new thread.")
    priority: Score | None = Field(
        default=None, description="How much it pulls at you (3 for a new thread by default)."
    )

    @field_validator("title", mode="after")
    @classmethod
    def _title_opens_a_thread(cls, title: str | None, info: ValidationInfo) -> str | None:
        if title is None and info.data.get("thread_id") is None:
            raise ValueError("is required to open a thread (give thread_id to update one)")
        return title


class SnapshotIn(_Input):
    content: str = Field(
        min_length=1, max_length=MAX_FIELD, description="Your state right now: what you are doing, feeling, holding."
    )
    mood: str = Field(default="", max_length=128, description="A word or two for the mood.")


MAX_KEY = 128


class WriteKey(_Input):
    """The optional idempotency key of a write: the same key again returns the first result and stores nothing."""

    idempotency_key: str | None = Field(
        default=None, min_length=1, max_length=MAX_KEY, description="A retry with it returns the first result."
    )

    @field_validator("idempotency_key", mode="after")
    @classmethod
    def _visible_ascii(cls, key: str | None) -> str | None:
        if key is not None and not all("!" <= c <= "~" for c in key):
            raise ValueError(
                "must be visible ASCII characters only: letters, digits, punctuation, no spaces (a UUID works)"
            )
        return key


def _line_by_role(schema: dict[str, Any]) -> None:
    # Callers name a line's side by its role, as they do a turn's; `is_self` is what the role becomes.
    properties = schema["properties"]
    properties.pop("is_self", None)
    properties["role"] = {"type": "string", "enum": list(TURN_ROLES), "description": "assistant for your own lines"}


class ConversationLine(_Input):
    """One recent line of a dialogue used as a query; `role: "assistant"` is accepted for is_self."""

    model_config = ConfigDict(json_schema_extra=_line_by_role)

    speaker: str = Field(default="", max_length=128, description="who said it")
    text: str = Field(min_length=1, max_length=MAX_LINE, description="what was said")
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


RECENT_LINES = "This conversation's last lines, oldest first."


class SearchIn(_Input):
    # `conversation` comes first so the query's check below can see it.
    conversation: list[ConversationLine] = Field(
        default_factory=list, max_length=MAX_CONVERSATION, description=RECENT_LINES
    )
    query: str = Field(
        default="",
        max_length=MAX_QUERY,
        validate_default=True,
        description="What to look for, in any language; word* asks for the words it begins.",
    )
    limit: StrictInt = Field(default=10, ge=1, le=100)
    kinds: SearchKind = Field(default="all", description="Memories and turns, memories only, or turns only.")
    mode: SearchMode = Field(default="hybrid", description="words + meaning, words only, or meaning only.")
    since: Instant = Field(default=None, description="At or after this time.")
    until: Instant = Field(default=None, description="At or before this time.")

    _something_to_find = field_validator("query", mode="after")(_query_or_lines)


MIN_BUDGET, MAX_BUDGET = 100, 32_000
Budget = Annotated[StrictInt, Field(ge=MIN_BUDGET, le=MAX_BUDGET)]


SESSION = "This conversation's id: no item is shown to it twice."
BUDGET = "Most tokens the block may take."


class InjectIn(_Input):
    """The session-start block: for which session (so later turns do not repeat it), within how many tokens."""

    session_id: str = Field(default="", max_length=256, description=SESSION)
    budget: Budget | None = Field(default=None, description=BUDGET)


class PrefetchIn(_Input):
    """The per-turn block: a question and/or the conversation's recent lines, as for a search."""

    conversation: list[ConversationLine] = Field(
        default_factory=list, max_length=MAX_CONVERSATION, description=RECENT_LINES
    )
    query: str = Field(
        default="", max_length=MAX_QUERY, validate_default=True, description="What the user just said or asked."
    )
    session_id: str = Field(default="", max_length=256, description=SESSION)
    budget: Budget | None = Field(default=None, description=BUDGET)

    _something_to_recall = field_validator("query", mode="after")(_query_or_lines)


# --- reads ---------------------------------------------------------------------------------


HISTORY = "Every earlier version too."


class RecallQuery(_Input):
    limit: StrictInt = Field(default=10, ge=1, le=100)
    narrative_type: NarrativeType | None = Field(default=None, description="Only this type.")
    tags: list[Annotated[str, Field(min_length=1, max_length=MAX_TAG)]] = Field(
        default_factory=list, max_length=MAX_TAGS, description="Only memories with any of these tags."
    )
    since: Instant = Field(default=None, description="Happened at or after this time.")
    until: Instant = Field(default=None, description="Happened at or before this time.")
    order: Literal["recent", "weight"] = Field(default="recent", description="Newest or heaviest first.")


class TimelineQuery(_Input):
    session_id: str = Field(default="", max_length=256, description="The session to read; empty for the latest of all.")
    limit: StrictInt = Field(default=50, ge=1, le=500)
    since: Instant = Field(default=None, description="Said at or after this time.")
    until: Instant = Field(default=None, description="Said at or before this time.")


class ProfilesQuery(_Input):
    entity: Annotated[str | None, BeforeValidator(_none_if_empty)] = Field(
        default=None, max_length=128, description="Only this entity; empty for all."
    )
    kind: ProfileKind | None = Field(default=None, description="Only this kind.")
    with_history: StrictBool = Field(default=False, description=HISTORY)


class SelfConceptQuery(_Input):
    kind: SelfConceptKind | None = Field(default=None, description="Only this kind.")
    with_history: StrictBool = Field(default=False, description=HISTORY)


class ThreadsQuery(_Input):
    status: ThreadStatus | None = Field(default=None, description="Only threads with this status.")
    limit: StrictInt = Field(default=20, ge=1, le=100)


class SnapshotQuery(_Input):
    limit: StrictInt = Field(default=1, ge=1, le=50, description="How many snapshots, newest first.")


class GraphQuery(_Input):
    entity: str | None = Field(
        default=None, min_length=1, max_length=128, description="An entity's name: its node and its edges."
    )
    other: str | None = Field(
        default=None, min_length=1, max_length=128, description="With `entity`: only the edges between the two."
    )
    top: StrictInt = Field(default=20, ge=1, le=200, description="How many nodes and edges at most.")

    @field_validator("other", mode="after")
    @classmethod
    def _pair_needs_entity(cls, other: str | None, info: ValidationInfo) -> str | None:
        if other is not None and info.data.get("entity") is None:
            raise ValueError("needs `entity` too: give both to see how two entities relate")
        return other


class HeatmapQuery(_Input):
    days: StrictInt = Field(default=7, ge=1, le=365, description="How many days back.")


MAX_TRIGGER_WAIT = 300  # seconds a caller may wait for a stage's result


class TriggerIn(_Input):
    job: str = Field(min_length=1, max_length=32, description="dream (every nightly stage) or one stage.")
    dry_run: StrictBool = Field(default=False, description="Return one stage's changes and write nothing.")
    # None: a dry run's default.
    wait: StrictInt | None = Field(
        default=None,
        ge=0,
        le=MAX_TRIGGER_WAIT,
        description="Seconds to wait for a stage's result (default 60 for a dry run, else 0).",
    )


class DreamLogQuery(_Input):
    limit: StrictInt = Field(default=20, ge=1, le=200, description="How many runs, newest first.")
    stage: str | None = Field(default=None, min_length=1, max_length=32, description="Only runs of this stage.")
    run_id: RowId | None = Field(default=None, description="One run (its id from the list): every change it applied.")


class DreamReviewIn(_Input):
    action: Literal["list", "approve", "reject"] = Field(
        default="list", description="List the proposals waiting, or approve or reject one."
    )
    run_id: RowId | None = Field(default=None, validate_default=True, description="The proposal to approve or reject.")

    @field_validator("run_id", mode="after")
    @classmethod
    def _run_id_names_the_proposal(cls, run_id: int | None, info: ValidationInfo) -> int | None:
        if run_id is None and info.data.get("action") in ("approve", "reject"):
            raise ValueError("is required to approve or reject a proposal")
        return run_id


class SoftClustersQuery(_Input):
    label: StrictInt | None = Field(
        default=None, ge=0, le=MAX_ID, description="A cluster's label (from the list): members, neighbours."
    )
    query: str | None = Field(
        default=None, min_length=1, max_length=2000, description="Text to route: which clusters it would light up."
    )
    limit: StrictInt = Field(default=20, ge=1, le=200, description="Members shown for `label`, 1–200 (default 20).")


class TopicsQuery(_Input):
    limit: StrictInt = Field(default=25, ge=1, le=200, description="How many topics, largest first.")
    sample: StrictInt = Field(default=3, ge=0, le=20, description="Example memories per topic.")


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
